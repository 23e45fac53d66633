// What the ops' variant tables (matmul/matmul_dispatch.h, attention/attention_dispatch.h) share:
// finding a variant by name, and explaining a choice by the variants passed over before it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forge::cuda {

// The variants tried before the chosen one, each with why it was passed over.
using PassedOver = std::vector<std::pair<const char*, std::string>>;

// The variant of that name in `table` (anything with a `const char* name`), or null.
template <class Variant>
const Variant* FindVariant(std::span<const Variant> table, std::string_view name) {
  for (const Variant& v : table) {
    if (name == v.name) return &v;
  }
  return nullptr;
}

// "chosen (passed over: a: why; b: why)", or "none" for no chosen variant.
inline std::string ExplainChoice(const char* chosen, const PassedOver& passed) {
  std::string s = chosen != nullptr ? chosen : "none";
  if (passed.empty()) return s;
  s += " (passed over:";
  for (size_t i = 0; i < passed.size(); ++i) {
    s += (i ? "; " : " ") + std::string(passed[i].first) + ": " + passed[i].second;
  }
  return s + ")";
}

}  // namespace forge::cuda
