// gemv_quant_reg_cuda (design in gemv_quant_reg.h): Q4_K / Q5_K super-blocks decoded in
// registers from 16-byte loads into tensor-core fragments.
//
// Super-block (256 elements): header d, dmin (F16), scales[12] (8 six-bit scales and mins), then
// (Q5_K) qh[32], then qs[128]. Element 64j + 32h + l (j < 4, h < 2, l < 32) is nibble h of
// qs[32j + l] (plus bit 2j + h of qh[l] as its fifth bit), in sub-block 2j + h.
// Lane (g, t) of a warp handles rows g and g + 8 of its 16-row group and, per super-block, quant
// chunks c = 0, 1: qs bytes [64c + 16t, 64c + 16t + 16), i.e. group j = 2c + t / 2 and l in
// [16 (t & 1), 16 (t & 1) + 16). MMA step s = 8c + 2i + h takes word i (bytes 4i .. 4i + 3) of
// chunk c, nibble h: A k-slots 2t, 2t + 1 hold bytes 4i, 4i + 2 and slots 2t + 8, 2t + 9 bytes
// 4i + 1, 4i + 3; the B fragment holds the activations of those same elements.
#include "backend/cuda/matmul/gemv_quant_reg.h"
#include "backend/cuda/matmul/matmul_args.h"
#include "backend/cuda/matmul/split_k.h"

#include <cuda_fp16.h>

#include <atomic>
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/gemv_quant_device.cuh"
#include "backend/cuda/ptx.cuh"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kSbElems = 256;

struct RegArgs {
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0;
  int64_t n = 0;
  int sbs = 0;  // super-blocks per row
  const __half* x = nullptr;
  int64_t x_stride = 0;
  const float* bias = nullptr;
  void* out = nullptr;
  int64_t out_stride = 0;
  int m = 0;
  bool out_f32 = true;
  int ks = 1;  // warps of a CTA splitting k
};

__device__ __forceinline__ uint32_t Prmt(uint32_t a, uint32_t b, uint32_t sel) {
  return __byte_perm(a, b, sel);
}

// x << s for s >= 0, x >> -s otherwise.
__device__ __forceinline__ uint32_t Shift(uint32_t x, int s) { return s >= 0 ? x << s : x >> -s; }

using ptx::AndOr;
constexpr uint32_t kMagic = gq::kMagic2;  // half2(1024, 1024)

template <bool kFive>
struct Q45K {
  static constexpr int kBytes = kFive ? 176 : 144;
  static constexpr int kQs = kFive ? 48 : 16;
  static constexpr int kPerRow = kFive ? 4 : 3;  // 16-byte loads a lane makes per row
  static constexpr int kSlots = 2 * kPerRow;     // ... for its two rows
  static constexpr int kStages = kFive ? 3 : 4;  // super-blocks in flight per warp
  static constexpr int kWarpBytes = kStages * kSlots * 32 * 16;
  static constexpr int kSmem = kWarps * kWarpBytes;  // two CTAs per SM
};

// Copies this lane's 16-byte pieces of super-block `sb` of its rows (header, (qh,) quant chunks
// 0 and 1 of row g, then of row g + 8) into its own slots of a stage: slot j of lane l at
// stage[32 j + l]. Rows past n are zero-filled, never read.
template <bool kFive>
__device__ __forceinline__ void IssueSb(uint32_t stage, const uint8_t* const (&rows)[2],
                                        const bool (&ok)[2], int64_t sb, int t, int lane) {
  using F = Q45K<kFive>;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint8_t* b = rows[h] + sb * F::kBytes;
    const int n = ok[h] ? 16 : 0;
    const uint32_t dst = stage + (h * F::kPerRow * 32 + lane) * 16;
    ptx::CpAsync16(dst, b, n);
    if constexpr (kFive) ptx::CpAsync16(dst + 32 * 16, b + 16 + 16 * (t & 1), n);
    ptx::CpAsync16(dst + (F::kPerRow - 2) * 32 * 16, b + F::kQs + 16 * t, n);
    ptx::CpAsync16(dst + (F::kPerRow - 1) * 32 * 16, b + F::kQs + 64 + 16 * t, n);
  }
}

// Per row and chunk: the f16x2 constants that turn (1024 + q) and (1024 + 16 q) into q * sc, and
// the minimum as an A value.
struct ChunkScales {
  uint32_t s_lo, o_lo, s_hi, o_hi, m_lo, m_hi;
};

// Scales and mins of sub-blocks 2j, 2j + 1 (j = 2c + t / 2) from the packed 12 bytes (header
// words y, z, w).
__device__ __forceinline__ ChunkScales ScalesOf(const uint4& hdr, int c, int t) {
  uint32_t sc4, mn4;
  if (c == 0) {  // sub-blocks 0..3: low 6 bits of scales[0..3], scales[4..7]
    sc4 = hdr.y & 0x3F3F3F3Fu;
    mn4 = hdr.z & 0x3F3F3F3Fu;
  } else {  // 4..7: low nibbles of scales[8..11] and top two bits of scales[0..3] / [4..7]
    sc4 = (hdr.w & 0x0F0F0F0Fu) | ((hdr.y >> 2) & 0x30303030u);
    mn4 = ((hdr.w >> 4) & 0x0F0F0F0Fu) | ((hdr.z >> 2) & 0x30303030u);
  }
  const uint32_t b0 = 2 * (t >> 1), b1 = b0 + 1;  // bytes of sub-blocks 2j (h = 0), 2j + 1
  const uint32_t sel0 = b0 | 0x4040u | (b0 << 8), sel1 = b1 | 0x4040u | (b1 << 8);
  // byte_perm with 0x64 bytes above: half2(1024 + v, 1024 + v); minus 1024: (v, v) exactly.
  const uint32_t s0 = ptx::Hadd2(Prmt(sc4, 0x64646464u, sel0), 0xE400E400u);
  const uint32_t s1 = ptx::Hadd2(Prmt(sc4, 0x64646464u, sel1), 0xE400E400u);
  ChunkScales r;
  r.s_lo = s0;
  r.o_lo = ptx::Hmul2(s0, 0xE400E400u);  // -1024 sc
  r.s_hi = ptx::Hmul2(s1, 0x2C002C00u);  // sc / 16
  r.o_hi = ptx::Hmul2(s1, 0xD400D400u);  // -64 sc
  r.m_lo = ptx::Hadd2(Prmt(mn4, 0x64646464u, sel0), 0xE400E400u);
  r.m_hi = ptx::Hadd2(Prmt(mn4, 0x64646464u, sel1), 0xE400E400u);
  return r;
}

// A values of word `w` (bytes 4i..4i+3 of a chunk): lo = nibble 0 of bytes (0, 2) and (1, 3),
// hi = nibble 1 of them; qh5: the matching qh word (Q5_K), shifted per sub-block.
template <bool kFive>
__device__ __forceinline__ void DecodeWord(uint32_t w, uint32_t qh, int bit_lo,
                                           const ChunkScales& s, uint32_t* lo02, uint32_t* lo13,
                                           uint32_t* hi02, uint32_t* hi13) {
  const uint32_t w8 = w >> 8;
  uint32_t ml02 = kMagic, ml13 = kMagic, mh02 = kMagic, mh13 = kMagic;
  if constexpr (kFive) {
    // Fifth bit (bit bit_lo of the qh byte for nibble 0, bit_lo + 1 for nibble 1) to bit 4 of
    // each half (nibble 0: 1024 + q) or bit 8 (nibble 1: 1024 + 16 q).
    const uint32_t q8 = qh >> 8;
    ml02 = AndOr(Shift(qh, 4 - bit_lo), 0x00100010u, kMagic);
    ml13 = AndOr(Shift(q8, 4 - bit_lo), 0x00100010u, kMagic);
    mh02 = AndOr(Shift(qh, 7 - bit_lo), 0x01000100u, kMagic);
    mh13 = AndOr(Shift(q8, 7 - bit_lo), 0x01000100u, kMagic);
  }
  *lo02 = ptx::Hfma2(AndOr(w, 0x000F000Fu, ml02), s.s_lo, s.o_lo);
  *lo13 = ptx::Hfma2(AndOr(w8, 0x000F000Fu, ml13), s.s_lo, s.o_lo);
  *hi02 = ptx::Hfma2(AndOr(w, 0x00F000F0u, mh02), s.s_hi, s.o_hi);
  *hi13 = ptx::Hfma2(AndOr(w8, 0x00F000F0u, mh13), s.s_hi, s.o_hi);
}

__device__ __forceinline__ uint32_t Word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Grid: ceil(n / (16 * 8 / ks)) CTAs of 8 warps; warp w takes row group w / ks and super-blocks
// w % ks, w % ks + ks, ... (ks = 1, 2, 4 or 8 warps split k). kNT 8-column tiles of activation
// rows (m <= 8 kNT): each super-block's A fragments are decoded once per chunk and multiplied
// with every tile's B fragments, each tile in the same order, so a row's sums do not depend on m.
template <bool kFive, int kNT>
__global__ void __launch_bounds__(kThreads, kNT == 1 ? 2 : 1)
    gemv_quant_reg_kernel(const RegArgs a) {
  using F = Q45K<kFive>;
  extern __shared__ __align__(16) uint4 smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ks = a.ks, kw = warp % ks;
  const int64_t group0 = static_cast<int64_t>(blockIdx.x) * (kWarps / ks) * 16 + (warp / ks) * 16;
  const uint8_t* rows[2];
  bool ok[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = group0 + g + 8 * h;
    ok[h] = row < a.n;
    rows[h] = a.w + (ok[h] ? row : 0) * a.row_bytes;
  }
  const uint32_t ring =
      static_cast<uint32_t>(__cvta_generic_to_shared(smem)) + warp * F::kWarpBytes;
  constexpr int kStageBytes = F::kSlots * 32 * 16;
  const int count = kw < a.sbs ? (a.sbs - kw + ks - 1) / ks : 0;  // this warp's super-blocks
  // The first stages' weights depend on no earlier kernel: in flight before waiting.
#pragma unroll
  for (int s = 0; s < F::kStages - 1; ++s) {
    if (s < count)
      IssueSb<kFive>(ring + s * kStageBytes, rows, ok, kw + static_cast<int64_t>(s) * ks, t, lane);
    ptx::CpAsyncCommit();
  }
  PdlWait();
  PdlLaunchDependents();
  float acc[kNT][4] = {};
  // Tile j's B operand: activation row g + 8 j of this lane (zeros past m).
  const __half* xrow = a.x + g * a.x_stride + 16 * (t & 1) + 64 * (t >> 1);
  const int64_t xtile = 8 * a.x_stride;
  for (int it = 0; it < count; ++it) {
    const int64_t sb = kw + static_cast<int64_t>(it) * ks;
    ptx::CpAsyncWait<F::kStages - 2>();  // this lane's copies of super-block `it` have landed
    const uint4* st = smem + (warp * F::kWarpBytes + (it % F::kStages) * kStageBytes) / 16;
    uint4 ld[2][F::kPerRow];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int j = 0; j < F::kPerRow; ++j) ld[h][j] = st[(h * F::kPerRow + j) * 32 + lane];
    }
    // One accumulator chain per term and tile: a super-block's 16 dependent MMAs per tile take
    // far less time than its bytes take to arrive, and fewer chains mean fewer zeroings and sums.
    float tq[kNT][4] = {}, tm[kNT][4] = {};
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const ChunkScales s0 = ScalesOf(ld[0][0], c, t);
      const ChunkScales s1 = ScalesOf(ld[1][0], c, t);
      const uint4 q0 = ld[0][F::kPerRow - 2 + c], q1 = ld[1][F::kPerRow - 2 + c];
      const int bit_lo = 4 * c + 2 * (t >> 1);
      // A fragments of the chunk, word i: lo (rows g, g + 8: l02a, l02b, l13a, l13b), then hi.
      uint32_t af[4][8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t qh0 = 0, qh1 = 0;
        if constexpr (kFive) {
          qh0 = Word(ld[0][1], i);
          qh1 = Word(ld[1][1], i);
        }
        DecodeWord<kFive>(Word(q0, i), qh0, bit_lo, s0, &af[i][0], &af[i][2], &af[i][4], &af[i][6]);
        DecodeWord<kFive>(Word(q1, i), qh1, bit_lo, s1, &af[i][1], &af[i][3], &af[i][5], &af[i][7]);
      }
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        // B fragments of tile j: runs (c, h) of 16 elements at 64 (2c + t / 2) + 16 (t & 1) + 32 h.
        uint2 b[8];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          uint4 x0 = make_uint4(0, 0, 0, 0), x1 = x0;
          if (g + 8 * j < a.m) {
            const uint4* p =
                reinterpret_cast<const uint4*>(xrow + j * xtile + sb * kSbElems + 128 * c + 32 * h);
            x0 = __ldg(p);
            x1 = __ldg(p + 1);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint32_t u = i < 2 ? (i == 0 ? x0.x : x0.z) : (i == 2 ? x1.x : x1.z);
            const uint32_t v = i < 2 ? (i == 0 ? x0.y : x0.w) : (i == 2 ? x1.y : x1.w);
            b[2 * i + h] = make_uint2(Prmt(u, v, 0x5410), Prmt(u, v, 0x7632));
          }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t* f = af[i];
          ptx::Mma(tq[j], f[0], f[1], f[2], f[3], b[2 * i]);
          ptx::Mma(tq[j], f[4], f[5], f[6], f[7], b[2 * i + 1]);
          ptx::Mma(tm[j], s0.m_lo, s1.m_lo, s0.m_lo, s1.m_lo, b[2 * i]);
          ptx::Mma(tm[j], s0.m_hi, s1.m_hi, s0.m_hi, s1.m_hi, b[2 * i + 1]);
        }
      }
    }
    // The stage read last iteration is free: refill it with super-block it + kStages - 1.
    const int nx = it + F::kStages - 1;
    if (nx < count) {
      IssueSb<kFive>(ring + (nx % F::kStages) * kStageBytes, rows, ok,
                     kw + static_cast<int64_t>(nx) * ks, t, lane);
    }
    ptx::CpAsyncCommit();
    // acc += d * sum(q sc x) - dmin * sum(m x), rows g (e < 2) and g + 8.
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 dd = __half22float2(*reinterpret_cast<const __half2*>(&ld[e >> 1][0].x));
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        // Rounded as written (no contraction left to the compiler): every tile count, so every
        // m, gives a row the same bits.
        acc[j][e] = __fadd_rn(acc[j][e], __fmaf_rn(dd.x, tq[j][e], -__fmul_rn(dd.y, tm[j][e])));
      }
    }
  }
  ptx::CpAsyncWait<0>();
  // Partial sums of the warps splitting k, added in warp order.
  __syncthreads();  // every warp is done with its ring
  constexpr int kCols = 8 * kNT;
  float* red = reinterpret_cast<float*>(smem);  // [warp][16 rows][kCols columns]
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      red[(warp * 16 + g + 8 * (e >> 1)) * kCols + 8 * j + 2 * t + (e & 1)] = acc[j][e];
    }
  }
  __syncthreads();
  const int groups = kWarps / ks;
  for (int i = threadIdx.x; i < groups * 16 * a.m; i += kThreads) {
    const int gr = i / (16 * a.m), rl = (i / a.m) % 16, c = i % a.m;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * groups * 16 + gr * 16 + rl;
    if (row >= a.n) continue;
    float sum = 0.0f;
    for (int w = 0; w < ks; ++w) sum += red[((gr * ks + w) * 16 + rl) * kCols + c];
    if (a.bias != nullptr) sum += a.bias[row];
    const int64_t o = c * a.out_stride + row;
    if (a.out_f32) {
      static_cast<float*>(a.out)[o] = sum;
    } else {
      static_cast<__half*>(a.out)[o] = __float2half_rn(sum);
    }
  }
}

template <bool kFive, int kNT>
Status Launch(const RegArgs& a, cudaStream_t stream) {
  static_assert(kWarps * 16 * 8 * kNT * 4 <= Q45K<kFive>::kSmem, "the sums fit in the rings");
  auto* kernel = gemv_quant_reg_kernel<kFive, kNT>;
  static std::atomic<uint64_t> smem_set{0};
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, Q45K<kFive>::kSmem, &smem_set));
  const int64_t rows_per_cta = 16 * (kWarps / a.ks);
  const int64_t blocks = (a.n + rows_per_cta - 1) / rows_per_cta;
  CUDA_RETURN_IF_ERROR(LaunchDependent(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                                       Q45K<kFive>::kSmem, stream, a));
  CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_reg_kernel");
  return Status::Ok();
}

}  // namespace

const char* GemvQuantRegWhyNot(const MatmulParams& p) {
  const WeightView& w = p.w;
  if (w.type != GgmlType::kQ4_K && w.type != GgmlType::kQ5_K) return "format not Q4_K/Q5_K";
  if (p.m < 1 || p.m > kGemvQuantRegMaxRows) return "m outside 1..32";
  if (p.x_type != DType::kF16) return "x not F16";
  if (p.out_type != DType::kF32 && p.out_type != DType::kF16) return "out not F32/F16";
  const int bytes = w.type == GgmlType::kQ4_K ? 144 : 176;
  if (w.rows < 1 || w.cols < kSbElems || w.cols % kSbElems != 0) {
    return "k not a multiple of 256";
  }
  if (w.cols / kSbElems > (int64_t{1} << 24) || w.rows > (int64_t{1} << 31) - 1) {
    return "k or rows too large";
  }
  if (w.row_bytes != w.cols / kSbElems * bytes) return "rows not as stored";
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr) return "null pointer";
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  if (!IsAligned(w.data, 16) || !IsAligned(p.x, 16)) return "w or x not 16-byte aligned";
  if (xs % 8 != 0 || xs < w.cols || os < w.rows) return "strides";
  if (!IsAligned(p.out, DTypeSize(p.out_type))) return "out misaligned";
  return nullptr;
}

bool GemvQuantRegApplies(const MatmulParams& p) { return GemvQuantRegWhyNot(p) == nullptr; }

Status gemv_quant_reg_cuda(const MatmulParams& p, cudaStream_t stream) {
  if (!GemvQuantRegApplies(p)) {
    return InvalidArgumentError("gemv_quant_reg_cuda: " + std::string(TypeName(p.w.type)) +
                                " with m=" + std::to_string(p.m) +
                                " is outside the register-decoding GEMV");
  }
  RegArgs a;
  UnpackMatmul(p, a);
  ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
  // Warps splitting k (1, 2, 4, 8), filling the resident slots (two CTAs per SM); ties to fewer
  // splits (longer runs per warp). It depends on n, k and the GPU, never on m.
  a.ks = SplitByFill(std::min(kWarps, a.sbs), 2 * sms, [&](int ks) {
    return (a.n + 16 * (kWarps / ks) - 1) / (16 * (kWarps / ks));
  });
  const bool five = p.w.type == GgmlType::kQ5_K;
  if (a.m <= 8) return five ? Launch<true, 1>(a, stream) : Launch<false, 1>(a, stream);
  if (a.m <= 16) return five ? Launch<true, 2>(a, stream) : Launch<false, 2>(a, stream);
  return five ? Launch<true, 4>(a, stream) : Launch<false, 4>(a, stream);
}

}  // namespace forge::cuda
