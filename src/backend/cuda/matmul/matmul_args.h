// The one unpacking of MatmulParams into a quantized kernel's argument struct. Every kernel's
// Args names the shared fields alike (w, row_bytes, n, k or sbs, x, x_stride, xq, bias, out,
// out_stride, m, x_type / out_type or out_f32); UnpackMatmul fills those the struct has, with the
// strides' defaults (0: k for x, n for out) resolved, and leaves the kernel's own fields alone.
#pragma once

#include <cstdint>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

template <class A>
void UnpackMatmul(const MatmulParams& p, A& a) {
  a.w = p.w.data;
  a.row_bytes = p.w.row_bytes;
  a.n = p.w.rows;
  if constexpr (requires { a.k; }) a.k = p.w.cols;
  if constexpr (requires { a.sbs; }) a.sbs = static_cast<int>(p.w.cols / 256);  // super-blocks
  a.x = static_cast<decltype(a.x)>(p.x);
  if constexpr (requires { a.x_stride; }) a.x_stride = p.x_stride ? p.x_stride : p.w.cols;
  if constexpr (requires { a.xq; }) a.xq = static_cast<decltype(a.xq)>(p.xq);
  a.bias = p.bias;
  a.out = p.out;
  if constexpr (requires { a.out_stride; }) a.out_stride = p.out_stride ? p.out_stride : p.w.rows;
  if constexpr (requires { a.m; }) a.m = static_cast<decltype(a.m)>(p.m);
  if constexpr (requires { a.out_f32; }) a.out_f32 = p.out_type == DType::kF32;
  if constexpr (requires { a.x_type; }) a.x_type = static_cast<int>(p.x_type);
  if constexpr (requires { a.out_type; }) a.out_type = static_cast<int>(p.out_type);
}

}  // namespace forge::cuda
