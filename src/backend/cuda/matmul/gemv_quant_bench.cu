// RunGemvQuantBench and RunGemmQuantBench: random blocks (finite scales) generated on the device,
// one call per copy per round between two events; the F16 rows and the dequantize + cuBLAS path
// use the same shapes, activations and rotation.
#include "backend/cuda/matmul/gemv_quant_bench.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/act_quant/act_quant_cuda.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/dequantize_cuda.h"
#include "backend/cuda/matmul/gemm_quant_cuda.h"
#include "backend/cuda/matmul/gemm_quant_mma.h"
#include "backend/cuda/matmul/gemv_cuda.h"
#include "backend/cuda/matmul/gemv_quant_cuda.h"
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/matmul/gemv_quant_reg.h"

namespace forge::cuda {
namespace {

__device__ __forceinline__ uint32_t Hash(uint64_t i, uint32_t seed) {
  uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) ^ seed;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  x *= 3266489917u;
  return x ^ (x >> 16);
}

__global__ void fill_bytes(uint8_t* p, size_t n, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    p[i] = static_cast<uint8_t>(Hash(i, seed));
  }
}

// F16 scales of magnitude ~2^-7 at byte offsets off0 and off1 (< 0: none) of every block.
__global__ void fix_scales(uint8_t* p, size_t blocks, int block_bytes, int off0, int off1,
                           uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t b = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += stride) {
    const uint32_t h = Hash(b, seed);
    const uint16_t v0 = static_cast<uint16_t>(0x2000u | (h & 0x3FFu) | ((h >> 15) & 0x8000u));
    const uint16_t v1 = static_cast<uint16_t>(0x2000u | ((h >> 10) & 0x3FFu));
    *reinterpret_cast<uint16_t*>(p + b * block_bytes + off0) = v0;
    if (off1 >= 0) *reinterpret_cast<uint16_t*>(p + b * block_bytes + off1) = v1;
  }
}

// Values in [-0.5, 0.5).
template <typename T>
__global__ void fill_values(T* p, size_t n, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    p[i] = FromF32<T>(static_cast<float>(Hash(i, seed) & 0xFFFF) / 65536.0f - 0.5f);
  }
}

Status FillValues(void* p, DType t, size_t n, uint32_t seed) {
  return DispatchDType(t, [&](auto zero) {
    using T = decltype(zero);
    fill_values<T><<<2048, 256>>>(static_cast<T*>(p), n, seed);
    CUDA_RETURN_IF_LAUNCH_ERROR("fill_values");
    return Status::Ok();
  });
}

void ScaleOffsets(GgmlType t, int* off0, int* off1) {
  *off1 = -1;
  switch (t) {
    case GgmlType::kQ2_K:
      *off0 = 80;
      *off1 = 82;
      return;
    case GgmlType::kQ3_K:
      *off0 = 108;
      return;
    case GgmlType::kQ6_K:
      *off0 = 208;
      return;
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      *off0 = 0;
      *off1 = 2;
      return;
    default:
      *off0 = 0;
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device memory, events and the cuBLAS handle, released on every path.
struct Resources {
  std::vector<void*> bufs;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t cublas = nullptr;
  ~Resources() {
    for (void* b : bufs) cudaFree(b);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (cublas) cublasDestroy(cublas);
  }
  StatusOr<void*> Alloc(size_t bytes) {
    void* p = nullptr;
    CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));
    bufs.push_back(p);
    return p;
  }
  void Free(void* p) {
    bufs.erase(std::remove(bufs.begin(), bufs.end(), p), bufs.end());
    cudaFree(p);
  }
};

// Median seconds of one call of run(copy) over `reps` rounds of all copies (after one warm-up).
template <typename Run>
StatusOr<double> Time(Resources& r, int copies, int reps, Run&& run) {
  for (int c = 0; c < copies; ++c) RETURN_IF_ERROR(run(c));
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(r.start));
    for (int c = 0; c < copies; ++c) RETURN_IF_ERROR(run(c));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(r.stop));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(r.stop));
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, r.start, r.stop));
    t.push_back(ms * 1e-3 / copies);
  }
  return Median(t);
}

// Copies of one [n, k] matrix of `type` in one allocation, enough to total `rotate` bytes (at
// least two): random blocks with finite scales.
struct BenchWeights {
  int64_t row_bytes = 0;
  int64_t bytes = 0;  // one copy
  int copies = 0;
  uint8_t* data = nullptr;
  const uint8_t* copy(int c) const { return data + static_cast<int64_t>(c) * bytes; }
};

StatusOr<BenchWeights> RandomWeights(Resources& r, GgmlType type, int64_t n, int64_t k,
                                     int64_t rotate) {
  BenchWeights w;
  const int bb = qd::BlockBytes(type);
  w.row_bytes = k / qd::BlockElems(type) * bb;
  w.bytes = n * w.row_bytes;
  w.copies = static_cast<int>(std::max<int64_t>(2, (rotate + w.bytes - 1) / w.bytes));
  const size_t total = static_cast<size_t>(w.bytes) * w.copies;
  ASSIGN_OR_RETURN(void* mem, r.Alloc(total));
  w.data = static_cast<uint8_t*>(mem);
  fill_bytes<<<2048, 256>>>(w.data, total, 1);
  int off0, off1;
  ScaleOffsets(type, &off0, &off1);
  fix_scales<<<2048, 256>>>(w.data, static_cast<size_t>(w.bytes / bb) * w.copies, bb, off0, off1,
                            2);
  CUDA_RETURN_IF_LAUNCH_ERROR("fix_scales");
  return w;
}

}  // namespace

StatusOr<std::vector<GemvQuantBenchRow>> RunGemvQuantBench(const GemvQuantBenchOptions& o) {
  if (o.m.empty() || o.shapes.empty() || o.repetitions < 1) {
    return InvalidArgumentError("gemv bench: no shapes, activation rows or repetitions");
  }
  int dev = 0, l2 = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t rotate = o.rotate_bytes > 0 ? o.rotate_bytes : 4 * std::max<int64_t>(l2, 1 << 20);
  const int max_m = *std::max_element(o.m.begin(), o.m.end());
  if (max_m < 1 || max_m > kGemvQuantMaxRows) {
    return InvalidArgumentError("gemv bench: m must be within 1.." +
                                std::to_string(kGemvQuantMaxRows));
  }
  Resources r;
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.start));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.stop));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&r.cublas));
  std::vector<GemvQuantBenchRow> rows;
  const GgmlType kFormats[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                               GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
                               GgmlType::kQ5_K, GgmlType::kQ6_K};
  for (const auto& [n, k] : o.shapes) {
    ASSIGN_OR_RETURN(void* x, r.Alloc(static_cast<size_t>(max_m) * k * 4));
    ASSIGN_OR_RETURN(void* out, r.Alloc(static_cast<size_t>(max_m) * n * 4));
    RETURN_IF_ERROR(FillValues(x, o.x_type, static_cast<size_t>(max_m) * k, 7));
    // The one-row activations' int8 form, as the op before a decode step's GEMV writes it
    // (act_quant.cuh): the DP4A GEMV is also timed taking it (the path decode takes).
    void* xq = nullptr;
    if (o.x_type == DType::kF16 && k % 256 == 0) {
      ASSIGN_OR_RETURN(xq, r.Alloc(static_cast<size_t>(2 * k + k / 32 * 8)));
      RETURN_IF_ERROR(act_quant_cuda(x, k, xq, nullptr));
    }
    auto add_row = [&](const std::string& name, int m, int64_t bytes, int copies, double s) {
      GemvQuantBenchRow row;
      row.weights = name;
      row.n = n;
      row.k = k;
      row.m = m;
      row.weight_bytes = bytes;
      row.copies = copies;
      row.seconds = s;
      row.bytes_per_second = bytes / s;
      rows.push_back(row);
    };
    for (GgmlType type : kFormats) {
      if (k % qd::BlockElems(type) != 0) continue;
      ASSIGN_OR_RETURN(const BenchWeights w, RandomWeights(r, type, n, k, rotate));
      // gemv_quant_cuda for every m; beside it the backend's one-stream GEMV (the activations as
      // two int8 terms, DP4A) where it applies.
      using Kernel = Status (*)(const MatmulParams&, cudaStream_t);
      const struct {
        const char* suffix;
        Kernel kernel;
        bool (*applies)(const MatmulParams&);
        bool with_form;
      } kernels[] = {{"", gemv_quant_cuda, GemvQuantApplies, false},
                     {" dp4a", gemv_quant_dp4a_cuda, GemvQuantDp4aApplies, false},
                     {" dp4a+form", gemv_quant_dp4a_cuda, GemvQuantDp4aApplies, true}};
      for (const auto& kn : kernels) {
        if (kn.with_form && xq == nullptr) continue;
        for (int m : o.m) {
          MatmulParams p;
          p.x = x;
          if (kn.with_form) p.xq = xq;
          p.w = {type, n, k, w.row_bytes, w.data};
          p.out = out;
          p.m = m;
          p.x_type = o.x_type;
          p.out_type = DType::kF32;
          if (!kn.applies(p)) continue;
          auto run = [&](int c) {
            p.w.data = w.copy(c);
            return kn.kernel(p, nullptr);
          };
          ASSIGN_OR_RETURN(const double s, Time(r, w.copies, o.repetitions, run));
          add_row(std::string(TypeName(type)) + kn.suffix, m, w.bytes, w.copies, s);
        }
      }
      r.Free(w.data);
    }
    // F16 weights (the activations as F16): cuBLAS, and gemv_cuda where it applies (m <= 8).
    const int64_t bytes = n * k * 2;
    const int copies = static_cast<int>(std::max<int64_t>(2, (rotate + bytes - 1) / bytes));
    ASSIGN_OR_RETURN(void* w, r.Alloc(static_cast<size_t>(bytes) * copies));
    RETURN_IF_ERROR(FillValues(w, DType::kF16, static_cast<size_t>(n) * k * copies, 3));
    RETURN_IF_ERROR(FillValues(x, DType::kF16, static_cast<size_t>(max_m) * k, 7));
    uint8_t* wb = static_cast<uint8_t*>(w);
    for (int m : o.m) {
      const float alpha = 1.0f, beta = 0.0f;
      auto gemm = [&](int c) -> Status {
        CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
            r.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), m, static_cast<int>(k), &alpha,
            wb + static_cast<int64_t>(c) * bytes, CUDA_R_16F, static_cast<int>(k), x, CUDA_R_16F,
            static_cast<int>(k), &beta, out, CUDA_R_32F, static_cast<int>(n), CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT));
        return Status::Ok();
      };
      ASSIGN_OR_RETURN(const double s, Time(r, copies, o.repetitions, gemm));
      add_row("F16 cuBLAS", m, bytes, copies, s);
      MatmulParams p;
      p.x = x;
      p.w = {GgmlType::kF16, n, k, k * 2, wb};
      p.out = out;
      p.m = m;
      p.x_type = DType::kF16;
      p.out_type = DType::kF32;
      if (GemvApplies(p, DType::kF16)) {
        auto run = [&](int c) {
          p.w.data = wb + static_cast<int64_t>(c) * bytes;
          return gemv_cuda(p, DType::kF16, nullptr);
        };
        ASSIGN_OR_RETURN(const double g, Time(r, copies, o.repetitions, run));
        add_row("F16 gemv_cuda", m, bytes, copies, g);
      }
    }
    r.Free(w);
    r.Free(x);
    r.Free(out);
    if (xq != nullptr) r.Free(xq);
  }
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return rows;
}

StatusOr<std::vector<GemmQuantBenchRow>> RunGemmQuantBench(const GemmQuantBenchOptions& o) {
  if (o.m.empty() || o.shapes.empty() || o.formats.empty() || o.repetitions < 1) {
    return InvalidArgumentError("gemm bench: no shapes, formats, activation rows or repetitions");
  }
  if (o.x_type == DType::kF32) return InvalidArgumentError("gemm bench: activations F16 or BF16");
  int dev = 0, l2 = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int64_t rotate = o.rotate_bytes > 0 ? o.rotate_bytes : 4 * std::max<int64_t>(l2, 1 << 20);
  const int max_m = *std::max_element(o.m.begin(), o.m.end());
  if (*std::min_element(o.m.begin(), o.m.end()) < 1) {
    return InvalidArgumentError("gemm bench: m must be at least 1");
  }
  constexpr int64_t kSlabBytes = int64_t{128} << 20;  // the CUDA backend's largest scratch
  Resources r;
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.start));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.stop));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&r.cublas));
  const cudaDataType ct = o.x_type == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
  std::vector<GemmQuantBenchRow> rows;
  for (const auto& [n, k] : o.shapes) {
    ASSIGN_OR_RETURN(void* x, r.Alloc(static_cast<size_t>(max_m) * k * 2));
    ASSIGN_OR_RETURN(void* out, r.Alloc(static_cast<size_t>(max_m) * n * 2));
    ASSIGN_OR_RETURN(void* scratch, r.Alloc(static_cast<size_t>(kSlabBytes)));
    // The quantized matmul's workspace as the backend gives it (global k splits; zero counters).
    ASSIGN_OR_RETURN(void* mma_ws, r.Alloc(kGemmQuantMmaWorkspaceBytes));
    CUDA_RETURN_IF_ERROR(cudaMemset(mma_ws, 0, kGemmQuantMmaWorkspaceBytes));
    RETURN_IF_ERROR(FillValues(x, o.x_type, static_cast<size_t>(max_m) * k, 7));
    const int64_t slab = std::max<int64_t>(1, std::min<int64_t>(n, kSlabBytes / (k * 2)));
    for (GgmlType type : o.formats) {
      if (!qd::IsQuantFormat(type)) {
        return InvalidArgumentError("gemm bench: " + std::string(TypeName(type)) +
                                    " is not a block format");
      }
      if (k % qd::BlockElems(type) != 0) continue;
      ASSIGN_OR_RETURN(const BenchWeights w, RandomWeights(r, type, n, k, rotate));
      for (int m : o.m) {
        MatmulParams p;
        p.x = x;
        p.w = {type, n, k, w.row_bytes, w.data};
        p.out = out;
        p.m = m;
        p.x_type = o.x_type;
        p.out_type = o.x_type;
        if (!GemmQuantApplies(p)) {
          return InvalidArgumentError("gemm bench: gemm_quant_cuda does not take " +
                                      std::string(TypeName(type)) + " m=" + std::to_string(m));
        }
        auto fused = [&](int c) {
          p.w.data = w.copy(c);
          return gemm_quant_cuda(p, nullptr);
        };
        ASSIGN_OR_RETURN(const double fs, Time(r, w.copies, o.repetitions, fused));
        // As CudaBackend::QuantMatmul does where it does not prefer the fused GEMM: slabs of
        // rows dequantized, each followed by its GEMM.
        auto slabs = [&](int c) -> Status {
          const uint8_t* wc = w.copy(c);
          const float alpha = 1.0f, beta = 0.0f;
          for (int64_t r0 = 0; r0 < n; r0 += slab) {
            const int64_t rows_now = std::min(slab, n - r0);
            RETURN_IF_ERROR(dequantize_rows_cuda(wc + r0 * w.row_bytes, type, rows_now, k, scratch,
                                                 o.x_type, nullptr));
            CUBLAS_RETURN_IF_ERROR(
                cublasGemmEx(r.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows_now), m,
                             static_cast<int>(k), &alpha, scratch, ct, static_cast<int>(k), x, ct,
                             static_cast<int>(k), &beta, static_cast<uint8_t*>(out) + r0 * 2, ct,
                             static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
          }
          return Status::Ok();
        };
        ASSIGN_OR_RETURN(const double ss, Time(r, w.copies, o.repetitions, slabs));
        double rs = 0;
        p.w.data = w.copy(0);
        if (GemvQuantRegApplies(p)) {
          auto reg = [&](int c) {
            p.w.data = w.copy(c);
            return gemv_quant_reg_cuda(p, nullptr);
          };
          ASSIGN_OR_RETURN(rs, Time(r, w.copies, o.repetitions, reg));
        }
        double ms = 0;
        if (GemmQuantMmaApplies(p)) {
          auto mma = [&](int c) {
            p.w.data = w.copy(c);
            return gemm_quant_mma_cuda(p, nullptr, 0, {mma_ws, kGemmQuantMmaWorkspaceBytes});
          };
          ASSIGN_OR_RETURN(ms, Time(r, w.copies, o.repetitions, mma));
        }
        const double flops = 2.0 * m * static_cast<double>(n) * static_cast<double>(k);
        GemmQuantBenchRow row;
        row.weights = std::string(TypeName(type));
        row.n = n;
        row.k = k;
        row.m = m;
        row.weight_bytes = w.bytes;
        row.copies = w.copies;
        row.fused_seconds = fs;
        row.fused_flops_per_second = flops / fs;
        row.slab_seconds = ss;
        row.slab_flops_per_second = flops / ss;
        row.reg_seconds = rs;
        row.mma_seconds = ms;
        rows.push_back(row);
      }
      r.Free(w.data);
    }
    r.Free(scratch);
    r.Free(mma_ws);
    r.Free(x);
    r.Free(out);
  }
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return rows;
}

}  // namespace forge::cuda
