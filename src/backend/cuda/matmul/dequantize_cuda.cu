// dequantize_cuda: one thread per 8 consecutive elements (a 16-byte F16/BF16 store, two for F32),
// a warp per 256 elements of a row; rows on grid y (strided past 65535). A CTA a row: capping grid
// y at 16 CTAs an SM, each taking every gridDim.y-th row, made a Q4_K slab of 16384 x 4096 18%
// slower (H200, s14).
#include "backend/cuda/matmul/dequantize_cuda.h"

#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/matmul/block_decode.cuh"

namespace forge::cuda {
namespace {

constexpr int kThreads = 256;

template <typename Out>
__device__ __forceinline__ void StoreOut8(Out* o, const float* v, bool vec) {
  if (vec) {
    Store8(o, *reinterpret_cast<const float(*)[8]>(v));
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) o[i] = FromF32<Out>(v[i]);
}

// ids == nullptr: out row r is W row r; else W row ids[r] - row_offset: zeros when that is
// outside [0, table_rows), NaN when ids[r] is outside [0, n_vocab).
template <GgmlType kT, typename Out>
__global__ void __launch_bounds__(kThreads)
    dequantize_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t k,
                      int64_t table_rows, const int32_t* __restrict__ ids, int64_t n,
                      int64_t row_offset, int64_t n_vocab, Out* __restrict__ out, bool vec) {
  const int64_t c8 = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c8 * 8 >= k) return;
  for (int64_t r = blockIdx.y; r < n; r += gridDim.y) {
    int64_t src = r;
    bool in_vocab = true, in_table = true;
    if (ids != nullptr) {
      const int64_t id = ids[r];
      src = id - row_offset;
      in_vocab = id >= 0 && id < n_vocab;
      in_table = src >= 0 && src < table_rows;
    }
    float v[8];
    if (in_vocab && in_table) {
      qd::Dequant8<kT>(w + src * row_bytes, c8 * 8, v);
    } else {
      const float fill = in_vocab ? 0.0f : __int_as_float(0x7fc00000);
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = fill;
    }
    StoreOut8(out + r * k + c8 * 8, v, vec);
  }
}

template <GgmlType kT>
Status LaunchType(const void* w, int64_t k, int64_t table_rows, const int32_t* ids, int64_t n,
                  int64_t row_offset, int64_t n_vocab, void* out, DType out_type,
                  cudaStream_t stream) {
  const int64_t row_bytes = k / qd::BlockElems(kT) * qd::BlockBytes(kT);
  const dim3 grid(static_cast<unsigned>((k / 8 + kThreads - 1) / kThreads),
                  static_cast<unsigned>(n < 65535 ? n : 65535));
  const bool vec = reinterpret_cast<uintptr_t>(out) % 16 == 0;
  return DispatchDType(out_type, [&](auto zero) {
    using Out = decltype(zero);
    dequantize_kernel<kT, Out>
        <<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(w), row_bytes, k, table_rows,
                                        ids, n, row_offset, n_vocab, static_cast<Out*>(out), vec);
    CUDA_RETURN_IF_LAUNCH_ERROR("dequantize_kernel");
    return Status::Ok();
  });
}

Status Launch(const void* w, GgmlType type, int64_t k, int64_t table_rows, const int32_t* ids,
              int64_t n, int64_t row_offset, int64_t n_vocab, void* out, DType out_type,
              cudaStream_t stream) {
  if (!DequantizeCudaSupports(type)) {
    return UnimplementedError("dequantize_cuda: weight type " + std::string(TypeName(type)));
  }
  const int be = qd::BlockElems(type);
  if (k <= 0 || k % be != 0 || n < 0) {
    return InvalidArgumentError("dequantize_cuda: " + std::string(TypeName(type)) + " rows of " +
                                std::to_string(k) + " elements (expected a positive multiple of " +
                                std::to_string(be) + ")");
  }
  if (reinterpret_cast<uintptr_t>(w) % 2 != 0 ||
      reinterpret_cast<uintptr_t>(out) % DTypeSize(out_type) != 0) {
    return InvalidArgumentError("dequantize_cuda: misaligned weight or output pointer");
  }
  if (n == 0) return Status::Ok();
  switch (type) {
#define FORGE_DEQUANT_CASE(T)                                                                    \
  case GgmlType::T:                                                                              \
    return LaunchType<GgmlType::T>(w, k, table_rows, ids, n, row_offset, n_vocab, out, out_type, \
                                   stream);
    FORGE_DEQUANT_CASE(kQ4_0)
    FORGE_DEQUANT_CASE(kQ4_1)
    FORGE_DEQUANT_CASE(kQ5_0)
    FORGE_DEQUANT_CASE(kQ5_1)
    FORGE_DEQUANT_CASE(kQ8_0)
    FORGE_DEQUANT_CASE(kQ2_K)
    FORGE_DEQUANT_CASE(kQ3_K)
    FORGE_DEQUANT_CASE(kQ4_K)
    FORGE_DEQUANT_CASE(kQ5_K)
    FORGE_DEQUANT_CASE(kQ6_K)
#undef FORGE_DEQUANT_CASE
    default:
      return UnimplementedError("dequantize_cuda: weight type " + std::string(TypeName(type)));
  }
}

}  // namespace

bool DequantizeCudaSupports(GgmlType type) { return qd::IsQuantFormat(type); }

Status dequantize_rows_cuda(const void* w, GgmlType type, int64_t n_rows, int64_t k, void* out,
                            DType out_type, cudaStream_t stream) {
  return Launch(w, type, k, n_rows, nullptr, n_rows, 0, n_rows, out, out_type, stream);
}

Status dequantize_gather_rows_cuda(const void* w, GgmlType type, int64_t k, int64_t table_rows,
                                   const int32_t* ids, int64_t n, void* out, DType out_type,
                                   cudaStream_t stream, int64_t row_offset, int64_t n_vocab) {
  if (ids == nullptr && n > 0) return InvalidArgumentError("dequantize_gather_rows_cuda: no ids");
  if (n_vocab == 0) n_vocab = table_rows;
  if (row_offset < 0 || table_rows < 0 || row_offset + table_rows > n_vocab) {
    return InvalidArgumentError("dequantize_gather_rows_cuda: rows " + std::to_string(row_offset) +
                                " .. " + std::to_string(row_offset + table_rows) +
                                " outside the vocabulary of " + std::to_string(n_vocab));
  }
  return Launch(w, type, k, table_rows, ids, n, row_offset, n_vocab, out, out_type, stream);
}

}  // namespace forge::cuda
