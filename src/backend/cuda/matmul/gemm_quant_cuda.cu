// gemm_quant_cuda: argument checks, the tile and split choices, and the dispatch to the format's
// kernel (gemm_quant_kernel.cuh).
#include "backend/cuda/matmul/gemm_quant_cuda.h"

#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/gemm_quant_internal.h"
#include "backend/cuda/matmul/matmul_args.h"

namespace forge::cuda {
namespace {

constexpr int64_t kRowsPerCta = 128;  // gemm_quant_kernel.cuh: kBM
constexpr int64_t kMaxTiles = 65535;  // grid y and z

// Activation rows per CTA: the smallest tile that holds m, 256 beyond 128 rows.
int ActivationTile(int64_t m) { return m <= 64 ? 64 : (m <= 128 ? 128 : 256); }

}  // namespace

const char* GemmQuantWhyNot(const MatmulParams& p) {
  const WeightView& w = p.w;
  if (!qd::IsQuantFormat(w.type)) return "not a block format";
  if (p.m < 1) return "m < 1";
  if (p.x_type != DType::kF16 && p.x_type != DType::kBF16) return "x not F16/BF16";
  if (p.out_type != DType::kF32 && p.out_type != p.x_type) return "out not F32 or x's type";
  const int be = qd::BlockElems(w.type);
  if (w.rows < 1 || w.cols < be || w.cols % be != 0 || w.cols > (int64_t{1} << 30)) {
    return "k not whole blocks up to 2^30";
  }
  if (w.row_bytes != w.cols / be * qd::BlockBytes(w.type)) return "rows not as stored";
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr) return "null pointer";
  if (!IsAligned(w.data, 2)) return "w not 2-byte aligned";
  if (!IsAligned(p.x, 16) || !IsAligned(p.out, DTypeSize(p.out_type))) {
    return "x not 16-byte aligned or out misaligned";
  }
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  if (xs < w.cols || xs % 8 != 0 || os < w.rows) return "strides";
  const int64_t bn = ActivationTile(p.m);
  if ((p.m + bn - 1) / bn > kMaxTiles || (w.rows + kRowsPerCta - 1) / kRowsPerCta > kMaxTiles) {
    return "more than 65535 tiles";
  }
  return nullptr;
}

bool GemmQuantApplies(const MatmulParams& p) { return GemmQuantWhyNot(p) == nullptr; }

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
  UnpackMatmul(p, a);
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
