// The stored type of each tensor under a weight format: one type for every matrix (pure), or a
// faithful re-statement of llama.cpp's llama_tensor_get_type for its k-quant mixes (Q4_K_M, ...).
#pragma once

#include "modelgen/model_spec.h"
#include "modelgen/tensor_plan.h"

namespace forge {

// The type of `t` (role, layer and dims set) in a model of `spec`. 1-D tensors stay F32. Rules
// (llama.cpp, for dense llama-family models; n = n_layer, i = the block index):
//  - output.weight (token_embd.weight when the embeddings are tied): Q6_K for every mix, or Q8_0
//    when its rows do not fit the mix's block; pure formats keep their type.
//  - attn_v: Q3_K_M: Q5_K for i < 2 else Q4_K; Q3_K_L: Q5_K; Q4_K_S: Q5_K for i < 4;
//    Q4_K_M, Q5_K_M: Q6_K where use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
//  - ffn_down: Q3_K_M: Q5_K for i < n/16 else Q4_K; Q3_K_L: Q5_K; Q4_K_S: Q5_K for i < n/8;
//    Q4_K_M, Q5_K_M: Q6_K where use_more_bits(i, n).
//  - attn_output: Q3_K_M: Q4_K; Q3_K_L: Q5_K.
//  - everything else: the mix's base type (Q3_K, Q4_K or Q5_K).
// Not modelled: the 70B attn_v bump, MoE rules, imatrix-dependent rules, Falcon.
// Fallback (as llama.cpp) when a row length is not a multiple of the type's block: Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0 (llama.cpp now picks IQ4_NL, which Forge does
// not read), Q8_K -> Q8_0; and F16 when even that does not fit. Applied to pure formats too, so
// tiny test shapes accept every --type; *fallback is set when it happens.
GgmlType ChooseTensorType(const ModelSpec& spec, const TensorPlan& t, bool* fallback);

}  // namespace forge
