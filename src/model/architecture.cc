// The architecture table.
#include "model/architecture.h"

#include "model/llama.h"

namespace forge {
namespace {

// One row per supported architecture (traits left out are false). qwen2, qwen3 and phi3 run
// llama's layer with their traits.
constexpr Architecture kArchitectures[] = {
    {.name = "llama",
     .rope = RopeStyle::kAdjacent,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "qwen2",
     .rope = RopeStyle::kNeox,
     .qkv_bias = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "qwen3",
     .rope = RopeStyle::kNeox,
     .qk_norm = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "phi3",
     .rope = RopeStyle::kNeox,
     .fused_qkv = true,
     .fused_gate_up = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
};

}  // namespace

const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string ArchitectureNames() {
  std::string names;
  for (const Architecture& a : kArchitectures) {
    if (!names.empty()) names += ", ";
    names += a.name;
  }
  return names;
}

}  // namespace forge
