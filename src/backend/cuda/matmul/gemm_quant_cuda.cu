// gemm_quant_cuda: argument checks, the tile and split choices, and the dispatch to the format's
// kernel (gemm_quant_kernel.cuh).
#include "backend/cuda/matmul/gemm_quant_cuda.h"

#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/gemm_quant_internal.h"

namespace forge::cuda {
namespace {

constexpr int64_t kRowsPerCta = 128;  // gemm_quant_kernel.cuh: kBM
constexpr int64_t kMaxTiles = 65535;  // grid y and z

// Activation rows per CTA: the smallest tile that holds m, 256 beyond 128 rows.
int ActivationTile(int64_t m) { return m <= 64 ? 64 : (m <= 128 ? 128 : 256); }

}  // namespace

namespace gm {

// Time in units of k per CTA, plus one unit for the pipeline's start and the reduction, times
// the waves of CTAs; the smallest split wins ties.
int ChooseSplit(int64_t tiles, int units, int slots) {
  int best = 1;
  int64_t best_cost = -1;
  for (int s = 1; s <= 8 && s <= units; s *= 2) {
    const int per = (units + s - 1) / s;
    if ((s - 1) * per >= units) continue;  // a CTA of the cluster would get no unit
    const int64_t waves = (tiles * s + slots - 1) / slots;
    const int64_t cost = waves * (per + 1);
    if (best_cost < 0 || cost < best_cost) {
      best = s;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace gm

bool GemmQuantPreferred(const MatmulParams& p) {
  if (!GemmQuantApplies(p)) return false;
  // Up to 64 rows (one 64-row activation tile) Q4_0 and Q4_K run 1.26-1.55x faster than
  // dequantize + cuBLAS on both shapes; Q6_K and Q8_0 do not (0.71-1.06x).
  // Long rows (k >= 8192) at 512 rows measured 1.13-1.32x only against 64 MiB slabs; against one
  // 128 MiB slab they measure 0.47-0.54x.
  const GgmlType t = p.w.type;
  return p.m <= 64 && (t == GgmlType::kQ4_0 || t == GgmlType::kQ4_K);
}

bool GemmQuantApplies(const MatmulParams& p) {
  const WeightView& w = p.w;
  if (!qd::IsQuantFormat(w.type) || p.m < 1) return false;
  if (p.x_type != DType::kF16 && p.x_type != DType::kBF16) return false;
  if (p.out_type != DType::kF32 && p.out_type != p.x_type) return false;
  const int be = qd::BlockElems(w.type);
  if (w.rows < 1 || w.cols < be || w.cols % be != 0 || w.cols > (int64_t{1} << 30)) return false;
  if (w.row_bytes != w.cols / be * qd::BlockBytes(w.type)) return false;
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr || !IsAligned(w.data, 2))
    return false;
  if (!IsAligned(p.x, 16) || !IsAligned(p.out, DTypeSize(p.out_type))) return false;
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  if (xs < w.cols || xs % 8 != 0 || os < w.rows) return false;
  const int64_t bn = ActivationTile(p.m);
  return (p.m + bn - 1) / bn <= kMaxTiles && (w.rows + kRowsPerCta - 1) / kRowsPerCta <= kMaxTiles;
}

Status gemm_quant_cuda(const MatmulParams& p, cudaStream_t stream) {
  return gemm_quant_cuda_split(p, 0, stream);
}

Status gemm_quant_cuda_split(const MatmulParams& p, int nsplit, cudaStream_t stream) {
  if (!GemmQuantApplies(p)) {
    return InvalidArgumentError(
        "gemm_quant_cuda: " + std::string(TypeName(p.w.type)) + " [" + std::to_string(p.w.rows) +
        ", " + std::to_string(p.w.cols) + "] with m=" + std::to_string(p.m) + ", x " +
        DTypeName(p.x_type) + ", out " + DTypeName(p.out_type) +
        " is outside the quantized GEMM (formats, F16/BF16 x, layout and alignment)");
  }
  const int64_t k = p.w.cols, n = p.w.rows;
  gm::Args a;
  a.w = p.w.data;
  a.row_bytes = p.w.row_bytes;
  a.n = n;
  a.k = k;
  a.x = p.x;
  a.x_stride = p.x_stride ? p.x_stride : k;
  a.bias = p.bias;
  a.out = p.out;
  a.out_stride = p.out_stride ? p.out_stride : n;
  a.m = p.m;
  a.out_f32 = p.out_type == DType::kF32;
  a.units = static_cast<int>((k + 255) / 256);
  a.windows = static_cast<int>((k + 63) / 64);
  if (nsplit != 0 && nsplit != 1 && nsplit != 2 && nsplit != 4 && nsplit != 8) {
    return InvalidArgumentError("gemm_quant_cuda: a split of k over " + std::to_string(nsplit) +
                                " CTAs (expected 1, 2, 4 or 8)");
  }
  if (nsplit > a.units) {
    return InvalidArgumentError("gemm_quant_cuda: a split of k over " + std::to_string(nsplit) +
                                " CTAs with " + std::to_string(a.units) + " units of 256");
  }
  const int bn = ActivationTile(p.m);
  const int64_t m_tiles = (p.m + bn - 1) / bn;
  const int64_t n_tiles = (n + kRowsPerCta - 1) / kRowsPerCta;
  RETURN_IF_ERROR(
      qd::IsKQuant(p.w.type)
          ? gm::LaunchKQuant(p.w.type, p.x_type, bn, a, m_tiles, n_tiles, nsplit, stream)
          : gm::LaunchLegacy(p.w.type, p.x_type, bn, a, m_tiles, n_tiles, nsplit, stream));
  CUDA_RETURN_IF_LAUNCH_ERROR("gemm_quant_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
