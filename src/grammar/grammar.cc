// Compiles GrammarIr to the byte-level Grammar: classes become UTF-8 byte-set sequences (a rule
// of alternatives when there are several), alternatives are laid out flat, byte classes are
// computed, and left recursion (which would make the matcher's expansion loop) is refused.
#include "grammar/grammar.h"

#include <cstdio>
#include <map>

#include "grammar/gbnf_parser.h"
#include "grammar/stack_set_dfa.h"
#include "grammar/utf8_ranges.h"

namespace forge {

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromGbnf(std::string_view text,
                                                           const GrammarLimits& limits) {
  ASSIGN_OR_RETURN(GrammarIr ir, ParseGbnf(text, limits));
  return FromIr(ir);
}

StatusOr<std::shared_ptr<const Grammar>> Grammar::FromIr(const GrammarIr& ir) {
  if (ir.root < 0 || ir.root >= static_cast<int32_t>(ir.rules.size())) {
    return InvalidArgumentError("grammar has no root rule");
  }
  std::shared_ptr<Grammar> g(new Grammar());
  RETURN_IF_ERROR(g->Compile(ir));
  RETURN_IF_ERROR(g->CheckLeftRecursion());
  StackSetDfa probe(g.get(), false, DfaLimits());
  probe.Initial();
  if (probe.overflow_count() > 0) {
    return InvalidArgumentError(
        "grammar is too ambiguous: its first step has more parses than the matcher allows");
  }
  return std::shared_ptr<const Grammar>(std::move(g));
}

Status Grammar::Compile(const GrammarIr& ir) {
  const int32_t n_rules = static_cast<int32_t>(ir.rules.size());
  for (const IrRule& r : ir.rules) names_.push_back(r.name);
  root_ = ir.root;

  std::map<ByteSet, int32_t> terminal_ids;
  auto terminal = [&](const ByteSet& set) {
    auto [it, inserted] = terminal_ids.emplace(set, static_cast<int32_t>(terminals_.size()));
    if (inserted) terminals_.push_back(set);
    return it->second;
  };
  // Each class: its element sequence when it has one alternative, else a rule of its own.
  struct ClassForm {
    std::vector<GrammarElement> inline_elements;
    int32_t rule = -1;
  };
  std::vector<ClassForm> forms(ir.classes.size());
  std::vector<std::vector<std::vector<GrammarElement>>> class_rules;  // alternatives
  for (size_t c = 0; c < ir.classes.size(); ++c) {
    const std::vector<std::vector<ByteSet>> alts = Utf8Alternatives(ir.classes[c]);
    std::vector<std::vector<GrammarElement>> seqs;
    for (const std::vector<ByteSet>& alt : alts) {
      std::vector<GrammarElement> seq;
      for (const ByteSet& b : alt) seq.push_back({GrammarElement::Kind::kBytes, terminal(b)});
      seqs.push_back(std::move(seq));
    }
    if (seqs.size() == 1) {
      forms[c].inline_elements = std::move(seqs[0]);
    } else {
      forms[c].rule = n_rules + static_cast<int32_t>(class_rules.size());
      names_.push_back("class_" + std::to_string(c));
      class_rules.push_back(std::move(seqs));
    }
  }

  rule_alts_.push_back(0);
  for (const IrRule& r : ir.rules) {
    for (const IrSequence& seq : r.alternatives) {
      alt_starts_.push_back(static_cast<int32_t>(elements_.size()));
      for (const IrSymbol& s : seq) {
        if (s.kind == IrSymbol::Kind::kRule) {
          elements_.push_back({GrammarElement::Kind::kRule, s.index});
        } else if (forms[s.index].rule >= 0) {
          elements_.push_back({GrammarElement::Kind::kRule, forms[s.index].rule});
        } else {
          const auto& inl = forms[s.index].inline_elements;
          elements_.insert(elements_.end(), inl.begin(), inl.end());
        }
      }
      elements_.push_back({GrammarElement::Kind::kEnd, 0});
    }
    rule_alts_.push_back(static_cast<int32_t>(alt_starts_.size()));
  }
  for (const auto& alts : class_rules) {
    for (const auto& seq : alts) {
      alt_starts_.push_back(static_cast<int32_t>(elements_.size()));
      elements_.insert(elements_.end(), seq.begin(), seq.end());
      elements_.push_back({GrammarElement::Kind::kEnd, 0});
    }
    rule_alts_.push_back(static_cast<int32_t>(alt_starts_.size()));
  }
  ComputeByteClasses();
  return Status::Ok();
}

void Grammar::ComputeByteClasses() {
  // Partition refinement: start with one class; split every class by membership in each set.
  std::fill(byte_class_, byte_class_ + 256, 0);
  int n = 1;
  for (const ByteSet& set : terminals_) {
    int remap_in[256], remap_out[256];
    std::fill(remap_in, remap_in + 256, -1);
    std::fill(remap_out, remap_out + 256, -1);
    int next = 0;
    uint8_t updated[256];
    for (int b = 0; b < 256; ++b) {
      int* remap = set.Has(static_cast<uint8_t>(b)) ? remap_in : remap_out;
      if (remap[byte_class_[b]] < 0) remap[byte_class_[b]] = next++;
      updated[b] = static_cast<uint8_t>(remap[byte_class_[b]]);
    }
    std::copy(updated, updated + 256, byte_class_);
    n = next;
  }
  num_byte_classes_ = n;
}

Status Grammar::CheckLeftRecursion() const {
  const int32_t n = num_rules();
  // Rules that can match the empty string (fixpoint).
  std::vector<bool> nullable(static_cast<size_t>(n), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (int32_t start : alternatives(r)) {
        bool all = true;
        for (int32_t p = start; elements_[p].kind != GrammarElement::Kind::kEnd; ++p) {
          if (elements_[p].kind == GrammarElement::Kind::kBytes || !nullable[elements_[p].value]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // r -> s when s can be called before r reads a byte.
  std::vector<std::vector<int32_t>> edges(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t start : alternatives(r)) {
      for (int32_t p = start; elements_[p].kind == GrammarElement::Kind::kRule; ++p) {
        edges[r].push_back(elements_[p].value);
        if (!nullable[elements_[p].value]) break;
      }
    }
  }
  // Iterative depth-first search for a cycle.
  std::vector<uint8_t> color(static_cast<size_t>(n), 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int32_t, size_t>> path;
  for (int32_t start = 0; start < n; ++start) {
    if (color[start] != 0) continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == edges[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const int32_t s = edges[r][next++];
      if (color[s] == 1) {
        std::string cycle;
        bool in = false;
        for (const auto& [q, unused] : path) {
          if (q == s) in = true;
          if (in) cycle += names_[q] + " -> ";
        }
        cycle += names_[s];
        return InvalidArgumentError("left recursion: rule '" + names_[s] +
                                    "' can reach itself before reading a character (" + cycle +
                                    ")");
      }
      if (color[s] == 0) {
        color[s] = 1;
        path.push_back({s, 0});
      }
    }
  }
  return Status::Ok();
}

std::shared_ptr<StackSetDfa> Grammar::SharedAutomaton(const DfaLimits& limits) const {
  std::lock_guard<std::mutex> lock(shared_mu_);
  if (shared_ == nullptr) shared_ = std::make_shared<StackSetDfa>(this, true, limits);
  return shared_;
}

void Grammar::ReplaceSharedAutomaton(const StackSetDfa* old,
                                     std::shared_ptr<StackSetDfa> fresh) const {
  std::lock_guard<std::mutex> lock(shared_mu_);
  if (shared_.get() == old) shared_ = std::move(fresh);
}

std::string Grammar::ToString() const {
  std::string out;
  for (int32_t r = 0; r < num_rules(); ++r) {
    out += names_[r] + " ::=";
    bool first = true;
    for (int32_t start : alternatives(r)) {
      out += first ? " " : " | ";
      first = false;
      bool empty = true;
      for (int32_t p = start; elements_[p].kind != GrammarElement::Kind::kEnd; ++p) {
        empty = false;
        if (elements_[p].kind == GrammarElement::Kind::kRule) {
          out += names_[elements_[p].value] + " ";
          continue;
        }
        const ByteSet& set = terminals_[elements_[p].value];
        out += "[";
        for (int b = 0; b < 256; ++b) {
          if (!set.Has(static_cast<uint8_t>(b))) continue;
          int e = b;
          while (e + 1 < 256 && set.Has(static_cast<uint8_t>(e + 1))) ++e;
          char buf[16];
          std::snprintf(buf, sizeof(buf), e > b ? "\\x%02X-\\x%02X" : "\\x%02X", b, e);
          out += buf;
          b = e;
        }
        out += "] ";
      }
      if (empty) out += "\"\" ";
    }
    out += "\n";
  }
  return out;
}

}  // namespace forge
