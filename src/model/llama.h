// The llama-family forward pass (llama, qwen2, qwen3, phi3: architecture.cc), written once over
// Backend ops: fused or separate q/k/v and gate/up, biases, q/k norms, either rope style and
// rope frequency factors, each where the weights have them.
#pragma once

#include "base/status.h"
#include "model/model_config.h"
#include "model/step_context.h"

namespace forge {

// What this forward cannot run: a sliding attention window (it attends over every key).
Status CheckLlamaConfig(const ModelConfig& config);

// One step: embedding, the layers (K/V written into the step's pools), the final norm, the rows
// of StepMeta::out_idx and the LM head into the workspace's logits (logits_part under tensor
// parallelism). Nothing when the step wants no logits rows after the layers.
Status LlamaForward(const StepContext& step);

}  // namespace forge
