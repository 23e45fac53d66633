// Integer dot products of one weight row in a block format with one quantized activation row
// (act_quant.h), defined once, bit for bit, for the reference and every instruction-set path.
//
// Per block b (32 elements, or a k-quant's 256), from the weight's stored integers u and the
// activation's planes q_p, exact int32 sums for each plane p:
//   Q4_0, Q5_0, Q8_0   A_p = sum (u - o) q_p  (o = 8, 16, 0)            B_p = 0
//   Q4_1, Q5_1         A_p = sum u q_p                                  B_p = sum q_p
//   Q2_K               A_p = sum_g sc_g sum_g u q_p                     B_p = sum_g mn_g sum_g q_p
//   Q3_K, Q6_K         A_p = sum_g sc_g sum_g (u - o) q_p  (o = 4, 32)  B_p = 0
//   Q4_K, Q5_K         A_p = sum_g sc_g sum_g u q_p                     B_p = sum_g mn_g sum_g q_p
// (g: the format's groups of 16 or 32 with their integer scales sc and minimums mn), and the
// block's float factors w1, w2 (d and 0; d and m for Q4_1 / Q5_1; d and -dmin for the k-quants).
// Then, in this order, each operation rounded to float on its own:
//   a = (A_0 * 254 + A_1) * 254 + A_2 and b likewise, exactly (in double), then each to float;
//   r_b = a * (w1 * dx) + b * (w2 * dx)     (dx: the activation block's scale)
//   acc[b % 8] += r_b, acc starting at 0;   dot = ((acc0 + acc4) + (acc2 + acc6)) +
//                                                 ((acc1 + acc5) + (acc3 + acc7)).
// The integer sums are exact however they are computed, so the paths only have to share this
// float tail; a result depends on nothing but the two rows.
#pragma once

#include "backend/cpu/matmul/exact_float.h"
// (first: the float tail below must not be fused.)
#include <cstdint>

#include "backend/cpu/matmul/act_quant.h"
#include "quant/type_table.h"

namespace forge {

// The instruction sets the CPU matmul has paths for, in order of preference.
enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512Vnni = 2 };
const char* CpuIsaName(CpuIsa isa);
// The best path this CPU runs (AVX2 needs AVX2, FMA and F16C; the VNNI path AVX-512
// F/BW/DQ/VL/VNNI).
CpuIsa BestCpuIsa();
// The path the CPU backend uses: BestCpuIsa() unless limited by SetCpuIsa (tests force each path
// the CPU can run; the result must not change).
CpuIsa ActiveCpuIsa();
// Uses isa, or the best the CPU has where that is less. Not to be called while matmuls run.
void SetCpuIsa(CpuIsa isa);

inline constexpr int kIntDotMaxRows = 8;
// dot(weight row of x[0].nblocks blocks, x[r]) as defined above into out[r * out_stride], for
// r < nrows (1 .. kIntDotMaxRows): the weight row read and unpacked once for all of them.
using IntRowDots = void (*)(const uint8_t* w, const ActRow* x, int nrows, float* out,
                            int64_t out_stride);
// The row dots of a block format on an instruction set (the best the CPU has where isa is more);
// null where the type has none.
IntRowDots IntRowDotsFor(GgmlType type, CpuIsa isa);

namespace int_dot {

// The float tail of one block: a and b from the plane sums, r_b as above.
inline float BlockResult(const int32_t* a, const int32_t* b, float w1, float w2, float dx) {
  double da = a[0], db = b[0];
  for (int p = 1; p < kActPlanes; ++p) {
    da = da * kActRadix + a[p];
    db = db * kActRadix + b[p];
  }
  const float fa = static_cast<float>(da), fb = static_cast<float>(db);
  const float s1 = w1 * dx, s2 = w2 * dx;
  const float t1 = fa * s1, t2 = fb * s2;
  return t1 + t2;
}

inline float FinishAcc(const float* acc) {
  const float s0 = acc[0] + acc[4], s1 = acc[1] + acc[5], s2 = acc[2] + acc[6],
              s3 = acc[3] + acc[7];
  const float t0 = s0 + s2, t1 = s1 + s3;
  return t0 + t1;
}

}  // namespace int_dot
}  // namespace forge
