// The mixture-of-experts FFN block (blocks.h's FfnBlock for models with experts): the router's
// logits, Route (the k experts of each token and their weights), each expert's gate / up / down
// matmuls over the rows routed to it, and ExpertSum of the weighted outputs (plus a shared expert
// where the model has one, Qwen2-MoE) into delta.
//
// The rows are grouped by expert on the host: the step's chosen experts are read back (one
// synchronization per layer), each expert's rows gathered into one contiguous run, and each run
// multiplied by that expert's weights in place, as stored, through the backend's Matmul (whose
// variant table picks the kernel for the run's row count); the outputs are gathered back into
// (token, slot) order. Only the routed experts' weights are read. The synchronization keeps such
// steps out of graph capture.
#pragma once

#include <cstdint>

#include "model/step_context.h"

namespace forge {

Status MoeBlock(const StepContext& s, int64_t l);

// The block's workspace (MoeWorkspace) for up to `tokens` tokens as one buffer: its bytes, and
// the buffers at `base`. 0 bytes for a dense model.
int64_t MoeWorkspaceBytes(const ModelConfig& c, int64_t tokens, DType dtype);
MoeWorkspace MoeWorkspaceAt(void* base, const ModelConfig& c, int64_t tokens, DType dtype);

}  // namespace forge
