// A decoder forward pass written apart from Forge's, as the whole-model tests' oracle: dense
// (no paging, no batching), one token at a time over the whole prompt, in double precision, from
// the F32 tensors of a GGUF file. It follows the layers' definitions (the llama layer; Gemma's
// embedding scale, post-norms, GeGLU, soft-caps and windows; a mixture-of-experts FFN with
// softmax routing, top-k renormalization and a sigmoid-gated shared expert), with everything a
// file's keys would decide spelled out by the test in DenseSpec instead.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf_file.h"
#include "modelgen/model_spec.h"

namespace forge::testing {

struct DenseSpec {
  struct Layer {
    int64_t window = 0;  // keys a query sees (its own included); 0: every earlier key
    double rope_base = 10000, rope_scale = 1;
  };
  std::vector<Layer> layers;  // one per block
  bool neox = true;           // rotate halves (NeoX) or adjacent pairs
  bool qkv_bias = false, qk_norm = false;
  // Gemma.
  bool embd_scale = false, post_norms = false, gelu = false;
  double attn_cap = 0, final_cap = 0;
  // Mixture of experts: softmax over the router's logits, the k best, their weights divided by
  // their sum where norm_topk; a shared expert (ffn_*_shexp) weighted by sigmoid of its gate.
  int64_t k = 0;
  bool norm_topk = false;
  // The final norm's output [ids.size(), n_embd] instead of the logits (a decoder that embeds).
  bool hidden = false;
};

// [ids.size(), n_vocab] logits (tied embeddings when the file has no output.weight).
std::vector<double> DenseForward(const GgufFile& f, const std::vector<int32_t>& ids,
                                 const DenseSpec& spec);

// The small synthetic shape these tests make files of: vocabulary 300, width 64, 4 heads of 16
// (2 KV heads), FFN 96, `layers` blocks, F32 weights.
ModelSpec SmallSpec(const std::string& arch, int64_t layers);

// A prompt of n ids below 300.
std::vector<int32_t> SmallPrompt(int n);

// Forge's teacher-forced logits of `ids` from the file at `path` on `backend`, in one prefill, in
// chunks of 13 and token by token, each within `bound` (max |d| / max |ref|) of DenseForward's.
void ExpectMatchesDenseForward(const std::string& path, const DenseSpec& spec, Backend& backend,
                               const std::vector<int32_t>& ids, double bound);

}  // namespace forge::testing
