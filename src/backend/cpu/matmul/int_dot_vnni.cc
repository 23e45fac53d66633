// The AVX-512 VNNI integer row dots: int_dot_x86.h with 512-bit vectors and vpdpbusd.
#include "backend/cpu/matmul/exact_float.h"
#if defined(__x86_64__) || defined(__i386__)
// (exact_float.h first; every shared header before the target pragma, so that only this file's
// own kernels carry the AVX-512 target.)
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/int_dot_formats.h"
#include "backend/cpu/matmul/int_dot_paths.h"
#include "quant/blocks.h"

#if defined(__clang__)
#pragma clang attribute push(                                                               \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused source of several
// instructions, which -Wmaybe-uninitialized reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define FORGE_INT_DOT_NS vnni
#define FORGE_INT_DOT_512 1
#include "backend/cpu/matmul/int_dot_x86.h"

namespace forge::int_dot {
IntRowDots VnniRowDots(GgmlType t) { return vnni::RowDotsFor<true>(t); }
}  // namespace forge::int_dot

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // x86
