// gemv_quant_cuda: argument checks, the split-K choice and the dispatch to the format's kernel.
#include "backend/cuda/matmul/gemv_quant_cuda.h"

#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/gemv_quant_internal.h"
#include "backend/cuda/matmul/matmul_args.h"
#include "backend/cuda/matmul/split_k.h"

namespace forge::cuda {
namespace {

constexpr int kRowsPerCta = 128;  // gemv_quant_kernel.cuh: kRows
constexpr int kTileElems = 256;
constexpr int kMaxSplit = 8;  // portable cluster size

}  // namespace

const char* GemvQuantWhyNot(const MatmulParams& p) {
  const WeightView& w = p.w;
  if (!qd::IsQuantFormat(w.type)) return "not a block format";
  if (p.m < 1 || p.m > kGemvQuantMaxRows) return "m outside 1..16";
  const int be = qd::BlockElems(w.type);
  if (w.rows < 1 || w.cols < be || w.cols % be != 0 || w.cols > (int64_t{1} << 30)) {
    return "k not whole blocks up to 2^30";
  }
  if (w.row_bytes != w.cols / be * qd::BlockBytes(w.type)) return "rows not as stored";
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr) return "null pointer";
  if (!IsAligned(w.data, 2)) return "w not 2-byte aligned";
  if (!IsAligned(p.x, DTypeSize(p.x_type)) || !IsAligned(p.out, DTypeSize(p.out_type))) {
    return "x or out misaligned";
  }
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  if (xs < w.cols || os < w.rows) return "strides";
  return nullptr;
}

bool GemvQuantApplies(const MatmulParams& p) { return GemvQuantWhyNot(p) == nullptr; }

Status gemv_quant_cuda(const MatmulParams& p, cudaStream_t stream) {
  if (!GemvQuantApplies(p)) {
    return InvalidArgumentError(
        "gemv_quant_cuda: " + std::string(TypeName(p.w.type)) + " [" + std::to_string(p.w.rows) +
        ", " + std::to_string(p.w.cols) + "] with m=" + std::to_string(p.m) +
        " is outside the quantized GEMV (formats, 1 <= m <= 16, layout and alignment)");
  }
  const GgmlType type = p.w.type;
  const int64_t k = p.w.cols, n = p.w.rows;
  gq::Args a;
  UnpackMatmul(p, a);
  a.tiles = static_cast<int>((k + kTileElems - 1) / kTileElems);
  const int64_t last_elems = k - static_cast<int64_t>(a.tiles - 1) * kTileElems;
  a.last_tile_bytes = static_cast<int>(last_elems / qd::BlockElems(type) * qd::BlockBytes(type));

  ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
  const int64_t row_blocks = (n + kRowsPerCta - 1) / kRowsPerCta;
  if (row_blocks > 65535) {
    return InvalidArgumentError("gemv_quant_cuda: " + std::to_string(n) + " rows exceed " +
                                std::to_string(65535 * kRowsPerCta));
  }
  // CTAs of a cluster splitting k (1, 2, 4 or 8, at most one per tile), filling the resident
  // slots (two per SM); it depends on n, k and the GPU only, never on m.
  const int nsplit = SplitByFill(std::min(kMaxSplit, a.tiles), 2 * sms,
                                 [&](int s) { return row_blocks * s; });
  a.tiles_per_split = (a.tiles + nsplit - 1) / nsplit;
  Status st = qd::IsKQuant(type) ? gq::LaunchKQuant(type, a, nsplit, row_blocks, stream)
                                 : gq::LaunchLegacy(type, a, nsplit, row_blocks, stream);
  RETURN_IF_ERROR(st);
  CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
