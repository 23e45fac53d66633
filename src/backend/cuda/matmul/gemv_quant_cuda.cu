// gemv_quant_cuda: argument checks, the split-K choice and the dispatch to the format's kernel.
#include "backend/cuda/matmul/gemv_quant_cuda.h"

#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/gemv_quant_internal.h"
#include "backend/cuda/matmul/gemv_quant_reg.h"

namespace forge::cuda {
namespace {

constexpr int kRowsPerCta = 128;  // gemv_quant_kernel.cuh: kRows
constexpr int kTileElems = 256;
constexpr int kMaxSplit = 8;  // portable cluster size

// CTAs of a cluster splitting k (1, 2, 4 or 8, at most one per tile): the split whose CTAs fill
// the resident slots (two per SM) best over whole waves; a smaller split unless 2% better. It
// depends on n, k and the GPU only, never on m.
int ChooseSplit(int64_t row_blocks, int tiles, int slots) {
  int best = 1;
  double best_fill = -1;
  for (int s = 1; s <= kMaxSplit && s <= tiles; s *= 2) {
    const double fill = gq::WaveFill(row_blocks * s, slots);
    if (fill > best_fill + 0.02) {
      best = s;
      best_fill = fill;
    }
  }
  return best;
}

}  // namespace

bool GemvQuantApplies(const MatmulParams& p) {
  const WeightView& w = p.w;
  if (!qd::IsQuantFormat(w.type) || p.m < 1 || p.m > kGemvQuantMaxRows) return false;
  const int be = qd::BlockElems(w.type);
  if (w.rows < 1 || w.cols < be || w.cols % be != 0 || w.cols > (int64_t{1} << 30)) return false;
  if (w.row_bytes != w.cols / be * qd::BlockBytes(w.type)) return false;
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr || !IsAligned(w.data, 2))
    return false;
  if (!IsAligned(p.x, DTypeSize(p.x_type)) || !IsAligned(p.out, DTypeSize(p.out_type)))
    return false;
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  return xs >= w.cols && os >= w.rows;
}

Status gemv_quant_cuda(const MatmulParams& p, cudaStream_t stream) {
  if (!GemvQuantApplies(p)) {
    return InvalidArgumentError(
        "gemv_quant_cuda: " + std::string(TypeName(p.w.type)) + " [" + std::to_string(p.w.rows) +
        ", " + std::to_string(p.w.cols) + "] with m=" + std::to_string(p.m) +
        " is outside the quantized GEMV (formats, 1 <= m <= 16, layout and alignment)");
  }
  // Blocks that are 16-byte aligned, F16 activations: decoded in registers, no staging.
  if (GemvQuantRegApplies(p)) return gemv_quant_reg_cuda(p, stream);
  const GgmlType type = p.w.type;
  const int64_t k = p.w.cols, n = p.w.rows;
  gq::Args a;
  a.w = p.w.data;
  a.row_bytes = p.w.row_bytes;
  a.n = n;
  a.k = k;
  a.x = p.x;
  a.x_stride = p.x_stride ? p.x_stride : k;
  a.bias = p.bias;
  a.out = p.out;
  a.out_stride = p.out_stride ? p.out_stride : n;
  a.m = static_cast<int>(p.m);
  a.x_type = static_cast<int>(p.x_type);
  a.out_type = static_cast<int>(p.out_type);
  a.tiles = static_cast<int>((k + kTileElems - 1) / kTileElems);
  const int64_t last_elems = k - static_cast<int64_t>(a.tiles - 1) * kTileElems;
  a.last_tile_bytes = static_cast<int>(last_elems / qd::BlockElems(type) * qd::BlockBytes(type));

  ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
  const int64_t row_blocks = (n + kRowsPerCta - 1) / kRowsPerCta;
  if (row_blocks > 65535) {
    return InvalidArgumentError("gemv_quant_cuda: " + std::to_string(n) + " rows exceed " +
                                std::to_string(65535 * kRowsPerCta));
  }
  const int nsplit = ChooseSplit(row_blocks, a.tiles, 2 * sms);
  a.tiles_per_split = (a.tiles + nsplit - 1) / nsplit;
  Status st = qd::IsKQuant(type) ? gq::LaunchKQuant(type, a, nsplit, row_blocks, stream)
                                 : gq::LaunchLegacy(type, a, nsplit, row_blocks, stream);
  RETURN_IF_ERROR(st);
  CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
