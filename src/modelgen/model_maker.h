// MakeModel: writes a synthetic llama-family GGUF (llama or qwen2) with seeded random weights in
// any weight format. Rows are generated and quantized by every thread in parallel and each
// tensor is written as soon as it is done (while the next one is generated), so only two
// tensors are ever in memory. Values depend on the seed only, never on the thread count.
//
// Peaked output distributions (spec.peak > 0), for stable greedy paths: token t's embedding is
// a random direction e_t of RMS 1 and output row Successor(t) gets peak / n_embd * e_t added.
// attn_output and ffn_down are scaled by 1/sqrt(2 n_layer), so the final hidden state stays
// close to e_t, and the logit of Successor(t) sits about `peak` above the others, which are
// ~N(0, 1 + peak^2 / n_embd). At the embedding itself the top-1 margin is then about
// peak - sqrt(2 ln n_vocab) * sqrt(1 + peak^2 / n_embd) (tests/modelgen checks >= 8 at peak 20
// on tiny-k); through the blocks it shrinks as they move the hidden state away from e_t. The
// map is stored as forge.peaked.successor_mul/_add: Successor(t) = (mul * t + add) mod n_vocab.
// With tied embeddings the output rows are the embeddings, so each token is its own successor,
// with a logit of about n_embd.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "modelgen/model_spec.h"
#include "modelgen/tensor_plan.h"

namespace forge {

// Reads spec->vocab_from (when set) and sets spec->n_vocab to its token count.
Status ResolveVocab(ModelSpec* spec);

struct MakeModelStats {
  int64_t n_params = 0;
  int64_t n_bytes = 0;  // tensor data
  int n_tensors = 0;
  int n_fallback = 0;  // tensors whose recipe type did not fit (quant_recipe.h)
  int threads = 0;
  double seconds = 0;
};

// Writes the model to path (resolving vocab_from first). On error the partial file is removed.
StatusOr<MakeModelStats> MakeModel(const ModelSpec& spec, const std::string& path);

}  // namespace forge
