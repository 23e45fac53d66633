// The AVX2 integer row dots: int_dot_x86.h compiled for AVX2, FMA and F16C.
#include "backend/cpu/matmul/exact_float.h"
#if defined(__x86_64__) || defined(__i386__)
// (exact_float.h first; every shared header before the target pragma, so that only this file's
// own kernels carry the AVX2 target.)
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/int_dot_formats.h"
#include "backend/cpu/matmul/int_dot_paths.h"
#include "quant/blocks.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#define FORGE_INT_DOT_NS avx2
#include "backend/cpu/matmul/int_dot_x86.h"

namespace forge::int_dot {
IntRowDots Avx2RowDots(GgmlType t) { return avx2::RowDotsFor<false>(t); }
}  // namespace forge::int_dot

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // x86
