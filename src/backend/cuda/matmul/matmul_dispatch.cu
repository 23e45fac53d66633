// The CUDA matmul's variant table and the rule that picks among them (matmul_dispatch.h).
#include "backend/cuda/matmul/matmul_dispatch.h"

#include <algorithm>
#include <functional>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/cublas_matmul.h"
#include "backend/cuda/matmul/dequantize_cuda.h"
#include "backend/cuda/matmul/gemm_quant_cuda.h"
#include "backend/cuda/matmul/gemm_quant_mma.h"
#include "backend/cuda/matmul/gemv_cuda.h"
#include "backend/cuda/matmul/gemv_quant_cuda.h"
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/matmul/gemv_quant_reg.h"

namespace forge::cuda {
namespace {

// The weight's F16 / BF16 / F32 dtype where it is not in a block format.
bool DenseType(GgmlType t, DType* as) {
  switch (t) {
    case GgmlType::kF32:
      *as = DType::kF32;
      return true;
    case GgmlType::kF16:
      *as = DType::kF16;
      return true;
    case GgmlType::kBF16:
      *as = DType::kBF16;
      return true;
    default:
      return false;
  }
}

// --- Weights in a block format ---

// Taken wherever it runs: one activation row (one stream), two int8 terms, DP4A.
const char* Dp4aWhyNot(const MatmulParams& p, const MatmulResources&) {
  return GemvQuantDp4aWhyNot(p);
}
Status RunDp4a(const MatmulParams& p, const MatmulResources& r) {
  return gemv_quant_dp4a_cuda(p, r.stream);
}

const char* MmaWhyNot(const MatmulParams& p, const MatmulResources&) {
  return GemmQuantMmaWhyNot(p);
}
// Taken for Q4_K from 9 rows, for Q6_K from 2 (up to 256). Measured on an H100
// (bench/results/gemv-mma-*-h100-2026-11-25-s1*.txt): Q4_K against the register-decoding GEMV
// (up to 32 rows; faster up to 8), and at 64-256 rows on 14336 x 4096, 4096 x 14336 and
// 28672 x 4096 against dequantize + cuBLAS (1.6-3.9x slower than this kernel) and the fused GEMM
// (2.0-4.3x slower); Q6_K against dequantize + cuBLAS (1.3-3.4x slower at 8-256 rows) and, at 2-16
// rows, through the Q4_K_M decode step against the quantized GEMV
// (batched-ab-q6k-h100-2026-11-25-s10.txt). Above 256 rows (prefill) the fused GEMM and
// dequantize + cuBLAS keep the work.
const char* MmaDeclines(const MatmulParams& p) {
  if (p.w.type == GgmlType::kQ6_K) return p.m < 2 ? "Q6_K at one row" : nullptr;
  return p.m < 9 ? "Q4_K below 9 rows: gemv_quant_reg is faster" : nullptr;
}
Status RunMma(const MatmulParams& p, const MatmulResources& r) {
  return gemm_quant_mma_cuda(p, r.stream, 0, {r.mma_workspace, r.mma_workspace_bytes});
}

// Q4_K / Q5_K with F16 activations: registers decode the blocks for up to 32 rows.
const char* RegWhyNot(const MatmulParams& p, const MatmulResources&) {
  return GemvQuantRegWhyNot(p);
}
Status RunReg(const MatmulParams& p, const MatmulResources& r) {
  return gemv_quant_reg_cuda(p, r.stream);
}

// Any block format, up to 16 rows of any activation type: the weights staged in shared memory.
const char* GemvQuantWhyNotR(const MatmulParams& p, const MatmulResources&) {
  return GemvQuantWhyNot(p);
}
Status RunGemvQuant(const MatmulParams& p, const MatmulResources& r) {
  return gemv_quant_cuda(p, r.stream);
}

const char* GemmQuantWhyNotR(const MatmulParams& p, const MatmulResources&) {
  return GemmQuantWhyNot(p);
}
// Taken over dequantize + cuBLAS where it measured faster on the H200 (forge bench --gemv,
// bench/results/gemv-m16-256-h200-2026-11-22-s7.* and gemv-slab-h200-2026-11-22-s8.txt): Q4_0 and
// Q4_K at up to 64 activation rows (1.26-1.55x: dequantizing costs the same at any row count);
// elsewhere it is slower (0.4-0.96x; at 512 rows 0.47-0.54x against the backend's one-slab
// dequantization; long rows, k >= 8192, at 512 rows measured 1.13-1.32x only against 64 MiB
// slabs). Formats not measured (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K) keep dequantize + cuBLAS.
const char* GemmQuantDeclines(const MatmulParams& p) {
  if (p.w.type != GgmlType::kQ4_0 && p.w.type != GgmlType::kQ4_K) {
    return "not faster than dequantize + cuBLAS for this format";
  }
  return p.m > 64 ? "above 64 rows dequantize + cuBLAS is faster" : nullptr;
}
Status RunGemmQuant(const MatmulParams& p, const MatmulResources& r) {
  return gemm_quant_cuda(p, r.stream);
}

// Slabs of weight rows dequantized to the activation type in the scratch buffer, each followed
// by its GEMM: any block format, any row count (F32 activations: always).
const char* DequantWhyNot(const MatmulParams& p, const MatmulResources& r) {
  if (!qd::IsQuantFormat(p.w.type)) return "not a block format";
  if (p.out_type != p.x_type && p.out_type != DType::kF32) return "out not F32 or x's type";
  const int64_t row = p.w.cols * static_cast<int64_t>(DTypeSize(p.x_type));
  if (row > static_cast<int64_t>(r.dequant_scratch_bytes)) return "a row exceeds the scratch";
  return nullptr;
}
Status RunDequant(const MatmulParams& p, const MatmulResources& r) {
  const DType wt = p.x_type;
  const int64_t k = p.w.cols;
  const int64_t es = static_cast<int64_t>(DTypeSize(wt));
  const int64_t slab =
      std::min<int64_t>(p.w.rows, static_cast<int64_t>(r.dequant_scratch_bytes) / (k * es));
  const int64_t oes = static_cast<int64_t>(DTypeSize(p.out_type));
  for (int64_t row = 0; row < p.w.rows; row += slab) {
    const int64_t n = std::min(slab, p.w.rows - row);
    RETURN_IF_ERROR(dequantize_rows_cuda(p.w.row(row), p.w.type, n, k, r.dequant_scratch, wt,
                                         r.stream));
    RETURN_IF_ERROR(cublas_gemm(r.cublas, p, r.dequant_scratch, wt, k, n,
                                static_cast<char*>(p.out) + row * oes));
  }
  return add_matmul_bias(p, r.stream);
}

// --- F32 / F16 / BF16 weights (x in the weights' type; out F32 or that type) ---

// A few rows (decode): stream the weights once.
const char* HalfGemvWhyNot(const MatmulParams& p, const MatmulResources&) {
  DType wt;
  if (!DenseType(p.w.type, &wt)) return "not F32/F16/BF16";
  return GemvWhyNot(p, wt);
}
Status RunHalfGemv(const MatmulParams& p, const MatmulResources& r) {
  DType wt = DType::kF16;
  DenseType(p.w.type, &wt);
  return gemv_cuda(p, wt, r.stream);
}

// cuBLAS GemmEx: F16/BF16 on the tensor cores with F32 sums; F32 without TF32.
const char* CublasWhyNot(const MatmulParams& p, const MatmulResources&) {
  DType wt;
  return DenseType(p.w.type, &wt) ? nullptr : "not F32/F16/BF16";
}
Status RunCublas(const MatmulParams& p, const MatmulResources& r) {
  DType wt = DType::kF32;
  DenseType(p.w.type, &wt);
  const int64_t es = static_cast<int64_t>(DTypeSize(wt));
  RETURN_IF_ERROR(cublas_gemm(r.cublas, p, p.w.data, wt, p.w.row_bytes / es, p.w.rows, p.out));
  return add_matmul_bias(p, r.stream);
}

constexpr MatmulVariant kVariants[] = {
    {"gemv_quant_dp4a", Dp4aWhyNot, nullptr, RunDp4a},
    {"gemm_quant_mma", MmaWhyNot, MmaDeclines, RunMma},
    {"gemv_quant_reg", RegWhyNot, nullptr, RunReg},
    {"gemv_quant", GemvQuantWhyNotR, nullptr, RunGemvQuant},
    {"gemm_quant", GemmQuantWhyNotR, GemmQuantDeclines, RunGemmQuant},
    {"dequantize+cublas", DequantWhyNot, nullptr, RunDequant},
    {"gemv", HalfGemvWhyNot, nullptr, RunHalfGemv},
    {"cublas", CublasWhyNot, nullptr, RunCublas},
};

constexpr int64_t kBucketEnds[] = {1, 8, 16, 32, 64, 256};

}  // namespace

std::span<const MatmulVariant> MatmulVariants() { return kVariants; }

const MatmulVariant* FindMatmulVariant(std::string_view name) {
  return FindVariant(MatmulVariants(), name);
}

MatmulResources UsualMatmulResources() {
  MatmulResources r;
  r.dequant_scratch_bytes = size_t{128} << 20;
  r.mma_workspace_bytes = kGemmQuantMmaWorkspaceBytes;
  return r;
}

bool MatmulVariantTakes(std::string_view name, const MatmulParams& p) {
  const MatmulVariant* v = FindMatmulVariant(name);
  if (v == nullptr || v->why_not(p, UsualMatmulResources()) != nullptr) return false;
  return v->declines == nullptr || v->declines(p) == nullptr;
}

MatmulChoice ChooseMatmul(const MatmulParams& p, const MatmulResources& r) {
  MatmulChoice c;
  for (const MatmulVariant& v : kVariants) {
    if (const char* why = v.why_not(p, r)) {
      // Variants of the other weight kind are not worth naming.
      const bool other_kind = std::string_view(why) == "not a block format" ||
                              std::string_view(why) == "not F32/F16/BF16" ||
                              std::string_view(why).starts_with("format not");
      if (!other_kind) c.passed.emplace_back(v.name, std::string("does not run: ") + why);
      continue;
    }
    if (v.declines != nullptr) {
      if (const char* why = v.declines(p)) {
        c.passed.emplace_back(v.name, std::string("declined: ") + why);
        continue;
      }
    }
    c.variant = &v;
    return c;
  }
  return c;
}

int MatmulRowBucket(int64_t m) {
  int b = 0;
  for (int64_t end : kBucketEnds) {
    if (m <= end) return b;
    ++b;
  }
  return b;
}

size_t MatmulPlanner::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.w);
  for (int64_t v : {k.rows, k.cols, k.row_bytes, k.x_stride, k.out_stride,
                    static_cast<int64_t>(k.scratch), int64_t{k.type}, int64_t{k.x_type},
                    int64_t{k.out_type}, int64_t{k.bucket}, int64_t{k.align}}) {
    h = h * 1000003u ^ std::hash<int64_t>()(v);
  }
  return h;
}

StatusOr<const MatmulVariant*> MatmulPlanner::Plan(const MatmulParams& p,
                                                   const MatmulResources& r) {
  // Alignments the rules read: x, out and xq to 16 bytes, out to its element, xq given or not.
  auto a16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const int align = (a16(p.x) ? 1 : 0) | (a16(p.out) ? 2 : 0) |
                    (IsAligned(p.out, DTypeSize(p.out_type)) ? 4 : 0) |
                    (p.xq != nullptr ? 8 : 0) | (a16(p.xq) ? 16 : 0) |
                    (IsAligned(p.x, DTypeSize(p.x_type)) ? 32 : 0) |
                    (p.x == nullptr || p.out == nullptr ? 64 : 0);
  const Key key{p.w.data,
                p.w.rows,
                p.w.cols,
                p.w.row_bytes,
                p.x_stride,
                p.out_stride,
                r.dequant_scratch_bytes,
                static_cast<int>(p.w.type),
                static_cast<int>(p.x_type),
                static_cast<int>(p.out_type),
                MatmulRowBucket(p.m),
                align};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  MatmulChoice c = ChooseMatmul(p, r);
  if (c.variant == nullptr) {
    return InvalidArgumentError("cuda matmul: no kernel takes " + std::string(TypeName(p.w.type)) +
                                " [" + std::to_string(p.w.rows) + ", " +
                                std::to_string(p.w.cols) + "] with m=" + std::to_string(p.m) +
                                ", x " + DTypeName(p.x_type) + ", out " + DTypeName(p.out_type) +
                                ": " + c.Explain());
  }
  // Weights are few and fixed; a planner that sees this many keys is fed changing buffers.
  if (plans_.size() >= 65536) plans_.clear();
  plans_.emplace(key, c.variant);
  return c.variant;
}

GgmlType DeviceWeightType(GgmlType stored, DType act) {
  if (qd::IsQuantFormat(stored)) return stored;
  return act == DType::kF32 ? GgmlType::kF32
                            : (act == DType::kBF16 ? GgmlType::kBF16 : GgmlType::kF16);
}

MatmulChoice ChooseMatmulForShape(const WeightView& w, int64_t m, DType x_type, DType out_type,
                                  bool with_form) {
  // Addresses as the model's buffers have them (256-byte aligned); nothing is read.
  alignas(256) static uint8_t base[256];
  MatmulParams p;
  p.x = base;
  p.w = w;
  p.w.data = base;
  p.out = base;
  p.m = m;
  p.x_type = x_type;
  p.out_type = out_type;
  if (with_form && m == 1) p.xq = base;
  return ChooseMatmul(p, UsualMatmulResources());
}

}  // namespace forge::cuda
