// GbnfRules: collects named GBNF rules while a JSON schema is translated: unique names made
// from hints, rules with the same body shared, names reserved before their body is known (for
// recursive $refs), and the grammar text with "root" first.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace forge {

class GbnfRules {
 public:
  // reserved: names that hints never turn into (those AddNamed will define).
  explicit GbnfRules(std::vector<std::string> reserved = {});

  // A rule `name ::= body` whose name comes from hint (made of [a-zA-Z0-9-], unique); an earlier
  // rule with the same body is reused instead.
  std::string Add(std::string_view hint, const std::string& body);
  // A rule added once under exactly this name (for the shared primitives: "ws", "char", ...).
  // Returns name.
  std::string AddNamed(const std::string& name, const std::string& body);
  // A unique name now, its body later (Define); a reference may appear before the definition.
  std::string Reserve(std::string_view hint);
  void Define(const std::string& name, const std::string& body);
  bool Has(const std::string& name) const { return bodies_.count(name) != 0; }
  size_t total_bytes() const { return total_bytes_; }

  // "root ::= <root_body>" and then every rule in the order they were named.
  std::string ToGbnf(const std::string& root_body) const;

 private:
  std::string UniqueName(std::string_view hint);

  std::vector<std::string> order_;
  std::unordered_set<std::string> reserved_;
  std::unordered_set<std::string> defined_;
  std::unordered_map<std::string, std::string> bodies_;   // name -> body ("" until defined)
  std::unordered_map<std::string, std::string> by_body_;  // body -> name
  std::map<std::string, int> used_;
  size_t total_bytes_ = 0;
};

}  // namespace forge
