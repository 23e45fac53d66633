// The CUDA attention's variant table (attention_dispatch.h).
#include "backend/cuda/attention/attention_dispatch.h"

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/attention/attention_prefill_cuda.h"

namespace forge::cuda {
namespace {

const char* HalfCache(const AttentionParams& p) {
  return p.dtype == DType::kF16 || p.dtype == DType::kBF16 ? nullptr : "cache not F16/BF16";
}

// The tiled kernels compute plain scores over every earlier key, from q in F32 (as the model
// passes it; built for that one q type, they compile in a third of the time).
const char* Plain(const AttentionParams& p) {
  if (p.q_type != DType::kF32) return "q not F32";
  if (p.softcap != 0.0f) return "soft-capped scores";
  return p.window > 0 ? "a sliding window" : nullptr;
}

// FlashAttention-style prefill on Hopper warpgroup MMAs: head dims 64 and 128.
const char* PrefillWgmmaWhyNot(const AttentionParams& p) {
  if (p.n_tokens <= p.n_seqs) return "no sequence has more than one query";
  if (const char* why = Plain(p)) return why;
  if (const char* why = HalfCache(p)) return why;
  if (p.head_dim != 64 && p.head_dim != 128) return "head dim not 64/128";
  return AttentionPrefillWgmmaApplies(p) ? nullptr : "heads or blocks";
}
Status RunPrefillWgmma(const AttentionParams& p, const AttentionResources& r) {
  return attention_prefill_wgmma_cuda(p, r.stream);
}

// The FlashAttention-2-style prefill on mma.sync: head dims 80 and 96.
const char* PrefillMmaWhyNot(const AttentionParams& p) {
  if (p.n_tokens <= p.n_seqs) return "no sequence has more than one query";
  if (const char* why = Plain(p)) return why;
  if (const char* why = HalfCache(p)) return why;
  if (p.head_dim != 80 && p.head_dim != 96) return "head dim not 80/96";
  return AttentionPrefillApplies(p) ? nullptr : "heads or blocks";
}
Status RunPrefillMma(const AttentionParams& p, const AttentionResources& r) {
  return attention_prefill_cuda(p, r.stream);
}

// Split-KV paged decode: one query a sequence, up to 16 query heads a KV head.
const char* DecodeWhyNot(const AttentionParams& p) {
  if (p.n_tokens != p.n_seqs) return "a sequence has more than one query";
  if (const char* why = Plain(p)) return why;
  if (const char* why = HalfCache(p)) return why;
  if (p.head_dim != 64 && p.head_dim != 80 && p.head_dim != 96 && p.head_dim != 128) {
    return "head dim not 64/80/96/128";
  }
  return AttentionDecodeApplies(p) ? nullptr : "more than 16 query heads a KV head";
}
Status RunDecode(const AttentionParams& p, const AttentionResources& r) {
  return attention_decode_cuda(p, r.workspace, r.workspace_bytes, r.stream);
}

const char* GenericWhyNot(const AttentionParams& p) {
  return p.head_dim > 0 && p.head_dim <= 256 ? nullptr : "head dim above 256";
}
Status RunGeneric(const AttentionParams& p, const AttentionResources& r) {
  return attention_generic_cuda(p, r.stream);
}

constexpr AttentionVariant kVariants[] = {
    {"attention_prefill_wgmma", PrefillWgmmaWhyNot, RunPrefillWgmma},
    {"attention_prefill", PrefillMmaWhyNot, RunPrefillMma},
    {"attention_decode", DecodeWhyNot, RunDecode},
    {"attention_generic", GenericWhyNot, RunGeneric},
};

}  // namespace

std::span<const AttentionVariant> AttentionVariants() { return kVariants; }

const AttentionVariant* FindAttentionVariant(std::string_view name) {
  return FindVariant(AttentionVariants(), name);
}

AttentionChoice ChooseAttention(const AttentionParams& p) {
  AttentionChoice c;
  for (const AttentionVariant& v : kVariants) {
    if (const char* why = v.why_not(p)) {
      c.passed.emplace_back(v.name, why);
      continue;
    }
    c.variant = &v;
    return c;
  }
  return c;
}

}  // namespace forge::cuda
