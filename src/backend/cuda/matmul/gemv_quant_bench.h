// The decode GEMV's weight bandwidth per format (forge bench --gemv): gemv_quant_cuda on n x k
// matrices of every block format, and F16 weights through cuBLAS and gemv_cuda for comparison;
// and the fused quantized GEMM's rate (gemm_quant_cuda, m = 128 and 512) beside the path it
// replaces (dequantize slabs to F16, then cuBLAS). Each is rotated over copies totalling at least
// 4x the L2 cache (DESIGN.md), timed with CUDA events, median of the repetitions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "quant/type_table.h"

namespace forge::cuda {

struct GemvQuantBenchOptions {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{14336, 4096}, {4096, 14336}};  // (n, k)
  std::vector<int> m = {1};    // activation rows
  DType x_type = DType::kF16;  // the CUDA backend's activations for quantized models
  int repetitions = 20;        // timed rounds over all copies (median)
  int64_t rotate_bytes = 0;    // bytes read per round; 0: 4x the L2 cache
};

struct GemvQuantBenchRow {
  std::string weights;  // "Q4_K", ..., "F16 cuBLAS", "F16 gemv_cuda"
  int64_t n = 0, k = 0, m = 0;
  int64_t weight_bytes = 0;     // one matrix as stored
  int copies = 0;               // matrices rotated over
  double seconds = 0;           // median time of one call
  double bytes_per_second = 0;  // weight_bytes / seconds
};

StatusOr<std::vector<GemvQuantBenchRow>> RunGemvQuantBench(const GemvQuantBenchOptions& o = {});

struct GemmQuantBenchOptions {
  std::vector<std::pair<int64_t, int64_t>> shapes = {{14336, 4096}, {4096, 14336}};  // (n, k)
  std::vector<GgmlType> formats = {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K,
                                   GgmlType::kQ8_0};
  std::vector<int> m = {128, 512};  // activation rows
  DType x_type = DType::kF16;       // activations and output
  int repetitions = 20;             // timed rounds over all copies (median)
  int64_t rotate_bytes = 0;         // weight bytes per round; 0: 4x the L2 cache
};

struct GemmQuantBenchRow {
  std::string weights;  // "Q4_K", ...
  int64_t n = 0, k = 0, m = 0;
  int64_t weight_bytes = 0;           // one matrix as stored
  int copies = 0;                     // matrices rotated over
  double fused_seconds = 0;           // gemm_quant_cuda, median time of one call
  double fused_flops_per_second = 0;  // 2 m n k / time
  double slab_seconds = 0;            // dequantize_rows_cuda into 128 MiB slabs + cuBLAS each
  double slab_flops_per_second = 0;
  double reg_seconds = 0;  // gemv_quant_reg_cuda where it applies (Q4_K, Q5_K, m <= 32), else 0
  double mma_seconds = 0;  // gemm_quant_mma_cuda where it applies (Q4_K, m <= 256), else 0
};

StatusOr<std::vector<GemmQuantBenchRow>> RunGemmQuantBench(const GemmQuantBenchOptions& o = {});

}  // namespace forge::cuda
