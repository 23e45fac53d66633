// llama.cpp's per-tensor type rules for its k-quant mixes, restated for Forge's tensor plan.
#include "modelgen/quant_recipe.h"

namespace forge {
namespace {

bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool Fits(GgmlType type, int64_t row) { return row % GetTypeTraits(type).block_elems == 0; }

GgmlType FallbackType(GgmlType type) {
  switch (type) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
      return GgmlType::kQ4_0;
    case GgmlType::kQ4_K:
      return GgmlType::kQ5_0;
    case GgmlType::kQ5_K:
      return GgmlType::kQ5_1;
    case GgmlType::kQ6_K:
    case GgmlType::kQ8_K:
      return GgmlType::kQ8_0;
    default:
      return GgmlType::kF16;
  }
}

// The mix's choice before the row-length fallback.
GgmlType MixType(const ModelSpec& s, const TensorPlan& t) {
  const GgmlType base = s.weight_type;
  const bool is_output =
      t.role == TensorRole::kOutput || (s.tied_embeddings && t.role == TensorRole::kTokenEmbd);
  if (s.mix == QuantMix::kPure) return base;
  const int i = t.layer;
  const int n = static_cast<int>(s.n_layer);
  if (is_output) return Fits(base, t.dims[0]) ? GgmlType::kQ6_K : GgmlType::kQ8_0;
  switch (t.role) {
    case TensorRole::kAttnV:
      switch (s.mix) {
        case QuantMix::kQ3_K_M:
          return i < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
        case QuantMix::kQ3_K_L:
          return GgmlType::kQ5_K;
        case QuantMix::kQ4_K_S:
          return i < 4 ? GgmlType::kQ5_K : base;
        case QuantMix::kQ4_K_M:
        case QuantMix::kQ5_K_M:
          return UseMoreBits(i, n) ? GgmlType::kQ6_K : base;
        default:
          return base;
      }
    case TensorRole::kFfnDown:
      switch (s.mix) {
        case QuantMix::kQ3_K_M:
          return i < n / 16 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
        case QuantMix::kQ3_K_L:
          return GgmlType::kQ5_K;
        case QuantMix::kQ4_K_S:
          return i < n / 8 ? GgmlType::kQ5_K : base;
        case QuantMix::kQ4_K_M:
        case QuantMix::kQ5_K_M:
          return UseMoreBits(i, n) ? GgmlType::kQ6_K : base;
        default:
          return base;
      }
    case TensorRole::kAttnOut:
      if (s.mix == QuantMix::kQ3_K_M) return GgmlType::kQ4_K;
      if (s.mix == QuantMix::kQ3_K_L) return GgmlType::kQ5_K;
      return base;
    default:
      return base;
  }
}

}  // namespace

GgmlType ChooseTensorType(const ModelSpec& spec, const TensorPlan& t, bool* fallback) {
  *fallback = false;
  if (t.dims.size() < 2 || t.role == TensorRole::kRouter || t.role == TensorRole::kPositions) {
    return GgmlType::kF32;
  }
  GgmlType type = MixType(spec, t);
  if (!Fits(type, t.dims[0])) {
    *fallback = true;
    type = FallbackType(type);
    if (!Fits(type, t.dims[0])) type = GgmlType::kF16;
  }
  return type;
}

}  // namespace forge
