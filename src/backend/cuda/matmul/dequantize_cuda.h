// dequantize_cuda: stored GGUF blocks -> F32, F16 or BF16 rows on the device, bit exact with the
// CPU dequantizer (F16/BF16: its F32 values rounded to nearest even). Whole matrices serve
// prefill-sized matmuls (cuBLAS on a scratch copy, freed or reused by the caller: nothing is kept),
// gathered rows the token embedding lookup.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"
#include "quant/type_table.h"

namespace forge::cuda {

// Whether the dequantizers take `type` (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K .. Q6_K).
bool DequantizeCudaSupports(GgmlType type);

// out[r, :] = W[r, :] for r < n_rows: w holds n_rows rows of k elements (k a multiple of the
// block), RowBytes(type, k) each, 2-byte aligned; out is dense [n_rows, k] of out_type.
Status dequantize_rows_cuda(const void* w, GgmlType type, int64_t n_rows, int64_t k, void* out,
                            DType out_type, cudaStream_t stream);

// out[i, :] = W[ids[i] - row_offset, :] for i < n (ids on the device): the table's rows are the
// vocabulary ids row_offset .. row_offset + table_rows - 1 of n_vocab (0: table_rows). An id in
// [0, n_vocab) outside the table's slice gives a row of zeros; an id outside [0, n_vocab) a row
// of NaN (the table is never read out of bounds).
Status dequantize_gather_rows_cuda(const void* w, GgmlType type, int64_t k, int64_t table_rows,
                                   const int32_t* ids, int64_t n, void* out, DType out_type,
                                   cudaStream_t stream, int64_t row_offset = 0,
                                   int64_t n_vocab = 0);

}  // namespace forge::cuda
