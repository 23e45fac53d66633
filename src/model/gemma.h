// Gemma 2 and Gemma 3 (text): llama's attention and FFN blocks with the embeddings scaled by
// sqrt(n_embd), RMSNorms after the attention and the FFN as well as before, GeGLU (tanh GELU),
// q/k norms (Gemma 3), soft-capped scores and logits (Gemma 2), and sliding-window attention on
// most layers, whose rope base (Gemma 3) is a key of its own. GGUF files store the RMSNorm
// weights with Gemma's 1 added, so the norms are plain RMSNorms.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/step_context.h"

namespace forge {

// The families' own keys (architecture.h's configure), with llama.cpp's rules where a key is
// absent: the score scale, soft-caps, the window, which layers it applies to and their rope base.
Status ConfigureGemma2(const GgufFile& file, ModelConfig& config);
Status ConfigureGemma3(const GgufFile& file, ModelConfig& config);

// One step (architecture.h's forward).
Status GemmaForward(const StepContext& step);

}  // namespace forge
