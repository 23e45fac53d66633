// GbnfRules: name sanitizing and uniqueness, body sharing, and the grammar text.
#include "grammar/gbnf_rules.h"

namespace forge {

GbnfRules::GbnfRules(std::vector<std::string> reserved)
    : reserved_(reserved.begin(), reserved.end()) {}

std::string GbnfRules::UniqueName(std::string_view hint) {
  std::string base;
  for (char c : hint) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word) {
      base.push_back(c);
    } else if (!base.empty() && base.back() != '-') {
      base.push_back('-');
    }
    if (base.size() >= 40) break;
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.empty()) base.assign(1, 'r');
  if (base == "root") base = "root-value";
  int& n = used_[base];
  std::string name = base;
  while (bodies_.count(name) != 0 || reserved_.count(name) != 0) {
    name = base + "-" + std::to_string(++n);
  }
  bodies_[name] = "";
  return name;
}

std::string GbnfRules::Add(std::string_view hint, const std::string& body) {
  auto it = by_body_.find(body);
  if (it != by_body_.end()) return it->second;
  std::string name = UniqueName(hint);
  Define(name, body);
  return name;
}

std::string GbnfRules::AddNamed(const std::string& name, const std::string& body) {
  if (defined_.count(name) == 0) Define(name, body);
  return name;
}

std::string GbnfRules::Reserve(std::string_view hint) { return UniqueName(hint); }

void GbnfRules::Define(const std::string& name, const std::string& body) {
  bodies_[name] = body;
  defined_.insert(name);
  by_body_.emplace(body, name);
  order_.push_back(name);
  total_bytes_ += name.size() + body.size() + 6;
}

std::string GbnfRules::ToGbnf(const std::string& root_body) const {
  std::string out = "root ::= " + root_body + "\n";
  for (const std::string& name : order_) out += name + " ::= " + bodies_.at(name) + "\n";
  return out;
}

}  // namespace forge
