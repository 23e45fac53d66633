// Encoders for embeddings: BERT (learned positions, token type 0 added to every token, LayerNorm
// after the embeddings and after each sublayer, biases, an FFN of exact GELU) and nomic-bert
// (the same layout with rotary positions, one fused qkv matrix and a SwiGLU FFN). Attention sees
// every key of the sequence (bidirectional), and the output is the pooled last hidden states
// (blocks.h's PoolHidden) as the GGUF's pooling_type says.
#pragma once

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/step_context.h"

namespace forge {

// BERT's keys (architecture.h's configure): learned positions where the file has
// position_embd.weight (rope off), rotary ones otherwise.
Status ConfigureBert(const GgufFile& file, ModelConfig& config);

// One step (architecture.h's forward); every sequence of the step is whole.
Status BertForward(const StepContext& step);

}  // namespace forge
