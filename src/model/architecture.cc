// The architecture table.
#include "model/architecture.h"

#include "model/bert.h"
#include "model/gemma.h"
#include "model/llama.h"

namespace forge {
namespace {

// One row per supported architecture (traits left out are false). qwen2, qwen3, their
// mixture-of-experts forms and phi3 run llama's layer with their traits (an FFN of experts where
// the file has them: moe.h); gemma2 and gemma3 the Gemma layer (gemma.h); bert and nomic-bert
// the encoder layer (bert.h).
constexpr Architecture kArchitectures[] = {
    {.name = "llama",  // Mixtral: llama with experts
     .rope = RopeStyle::kAdjacent,
     .expert_weights_norm = true,
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
    {.name = "qwen2moe",  // a shared expert beside the routed ones
     .rope = RopeStyle::kNeox,
     .qkv_bias = true,
     .needs_experts = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "qwen3moe",
     .rope = RopeStyle::kNeox,
     .qk_norm = true,
     .expert_weights_norm = true,
     .needs_experts = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "phi3",
     .rope = RopeStyle::kNeox,
     .fused_qkv = true,
     .fused_gate_up = true,
     .check = CheckLlamaConfig,
     .forward = LlamaForward},
    {.name = "gemma2",
     .rope = RopeStyle::kNeox,
     .post_norms = true,
     .ffn_act = GluAct::kGeluTanh,
     .configure = ConfigureGemma2,
     .forward = GemmaForward},
    {.name = "gemma3",
     .rope = RopeStyle::kNeox,
     .qk_norm = true,
     .post_norms = true,
     .ffn_act = GluAct::kGeluTanh,
     .configure = ConfigureGemma3,
     .forward = GemmaForward},
    {.name = "bert",
     .rope = RopeStyle::kNeox,
     .qkv_bias = true,
     .ffn_act = GluAct::kGeluErf,
     .encoder = true,
     .configure = ConfigureBert,
     .forward = BertForward},
    {.name = "nomic-bert",
     .rope = RopeStyle::kNeox,
     .fused_qkv = true,
     .encoder = true,
     .configure = ConfigureBert,
     .forward = BertForward},
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
