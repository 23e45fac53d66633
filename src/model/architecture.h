// Architecture: the model architectures Forge runs, one row each in one table (architecture.cc):
// general.architecture -> the traits its config takes, what its forward cannot run (refused at
// load) and its forward pass. A new architecture is a file beside llama.cc with its forward and a
// row in that table; nothing else chooses by architecture.
#pragma once

#include <string>
#include <string_view>

#include "backend/cpu/rope/rope.h"
#include "backend/cpu/swiglu/swiglu.h"
#include "base/status.h"

namespace forge {

class GgufFile;
struct ModelConfig;
struct StepContext;

struct Architecture {
  const char* name = nullptr;  // general.architecture
  // Traits, copied into ModelConfig.
  RopeStyle rope = RopeStyle::kAdjacent;
  bool qkv_bias = false, qk_norm = false, fused_qkv = false, fused_gate_up = false;
  bool post_norms = false;
  GluAct ffn_act = GluAct::kSilu;
  // Encoders (BERT's layout: learned or rotary positions, LayerNorm after each sublayer, biases;
  // bert.h): their attention sees every key of the sequence unless the file's attention.causal
  // says otherwise, and they must name a pooling type.
  bool encoder = false;
  // Mixture of experts: the weights normalized unless the file's expert_weights_norm says
  // otherwise; whether the file must have experts (qwen2moe, qwen3moe) or may (llama: Mixtral).
  bool expert_weights_norm = false;
  bool needs_experts = false;
  // Reads the architecture's own keys into the config once the common ones are read (layers
  // sized); null: none.
  Status (*configure)(const GgufFile& file, ModelConfig& config) = nullptr;
  // Refuses a config the forward cannot run, naming the GGUF key; null: every config loads.
  Status (*check)(const ModelConfig& config) = nullptr;
  // One step on one rank (step_context.h): embedding, the layers, the final norm and the rank's
  // logits rows (under tensor parallelism its vocabulary slice; the runner gathers them).
  Status (*forward)(const StepContext& step) = nullptr;
};

// The row of general.architecture `name`, or null when Forge does not run it.
const Architecture* FindArchitecture(std::string_view name);
// The names Forge runs, "llama, qwen2, ..." (for errors).
std::string ArchitectureNames();

}  // namespace forge
