// ModelSpec: the shape, weight format, vocabulary and seed of a synthetic llama-family model, the
// named presets (tiny test shapes and the shapes of real models) and the weight-format names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "quant/type_table.h"

namespace forge {

// llama.cpp's mixed quantization recipes (llama-quantize's ftypes). kPure puts every matrix in
// ModelSpec::weight_type (llama-quantize --pure).
enum class QuantMix { kPure, kQ3_K_S, kQ3_K_M, kQ3_K_L, kQ4_K_S, kQ4_K_M, kQ5_K_S, kQ5_K_M };

// The synthetic vocabulary written when no --vocab-from file is given.
enum class VocabKind {
  kSpm,        // SentencePiece ("llama"): <unk> <s> </s>, 256 byte tokens, letter pieces
  kBpeLlama3,  // byte-level BPE ("gpt2", pre "llama-bpe"), Llama-3 special tokens at the end
  kBpeQwen2,   // byte-level BPE ("gpt2", pre "qwen2"), Qwen2 special tokens at the end
  kWords,      // SentencePiece ending in English words (modelgen/word_vocab.h); fixed size
};

struct ModelSpec {
  // "llama", "qwen2" (QKV biases, like Qwen2/2.5), "qwen3" (per-head q/k RMSNorm), "gemma2" or
  // "gemma3" (post-norms, GeGLU; gemma3 with q/k norms), "qwen2moe" or "qwen3moe" (experts),
  // "bert" or "nomic-bert" (encoders)
  std::string arch = "llama";
  std::string name = "forge-synthetic";
  int64_t n_vocab = 512;
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;  // n_head / n_head_kv is the GQA ratio
  int64_t n_ff = 192;
  int64_t head_dim = 0;  // 0: n_embd / n_head (Qwen3's 0.6B: 16 heads of 128 over 1024)
  int64_t n_ctx = 2048;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;                  // blk.N.attn_{q,k,v}.bias (on for qwen2)
  bool tied_embeddings = false;           // no output.weight: the output projection is token_embd
  // Gemma: attention.sliding_window, attn_logit_softcapping and final_logit_softcapping, written
  // when set (0: the key is left out and the family's default applies).
  int64_t sliding_window = 0;
  float attn_softcap = 0.0f, final_softcap = 0.0f;
  // Mixture of experts (n_expert 0: a dense FFN of n_ff): n_expert experts of n_ff_exp features,
  // n_expert_used a token; a shared expert of n_ff_shexp features where set (qwen2moe). The arch
  // "llama" with experts is Mixtral's layout; qwen2moe and qwen3moe need them.
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  // Encoders: "bert" (learned positions, token types, LayerNorms with biases, GELU FFN, biases on
  // every matrix) and "nomic-bert" (rotary, a fused qkv matrix, SwiGLU, no biases), with the
  // GGUF's pooling_type (1 mean, 2 cls, 3 last); a decoder with pooling set embeds too.
  int pooling = 0;
  GgmlType weight_type = GgmlType::kF32;  // matrices (with mix == kPure); norms and biases F32
  QuantMix mix = QuantMix::kPure;
  // Peaked output distributions (see model_maker.h); 0 = off. The target logit is about `peak`
  // while the others stay about N(0, 1).
  float peak = 0.0f;
  VocabKind vocab = VocabKind::kSpm;
  // Peaked: the successor map permutes the ids from this one on (kWords: its first word; set by
  // MakeModel); 0: every id.
  int64_t successor_first = 0;
  // A GGUF whose tokenizer.* keys are copied, or a Hugging Face tokenizer.json imported as such
  // keys (sets n_vocab).
  std::string vocab_from;
  uint64_t seed = 1;
  int threads = 0;  // 0: every hardware thread
};

// A named preset; error for an unknown name (the message lists the known ones).
StatusOr<ModelSpec> ModelPreset(const std::string& name);
std::vector<std::string> ModelPresetNames();

// A weight format name: a type ("q8_0", "Q4_K", "f16": every matrix in it) or a llama.cpp mix
// ("q4_k_m", "Q5_K_S", ...). Sets spec->weight_type and spec->mix.
Status SetWeightFormat(const std::string& name, ModelSpec* spec);
std::string WeightFormatName(const ModelSpec& spec);
// llama.cpp's general.file_type for the spec's format, or -1 when it has none (Q8_K).
int FileTypeOf(const ModelSpec& spec);

// Checks the shape: heads divide n_embd, kv heads divide heads, head_dim even, sizes positive.
Status ValidateSpec(const ModelSpec& spec);
// The spec's head dim (head_dim, or n_embd / n_head when 0).
int64_t HeadDim(const ModelSpec& spec);

}  // namespace forge
