// attention_decode_cuda: grid (sequence, KV head), 4 warps. The group's G query rows sit in
// shared memory (F32); each warp takes tiles of 32 keys, staged into shared memory with coalesced
// loads: lane l scores key l of the tile against all G queries, the tile's softmax weights are
// folded into running (max, sum) per query, and the V rows are accumulated with each lane owning
// D / 32 adjacent dimensions (one vector load per V row for head dims 64 and 128). The four
// warps' partial states are merged at the end. Scores and sums are F32.
#include <cfloat>

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;

template <typename Tq, typename T, int D, int G>
__global__ void __launch_bounds__(kWarps * 32)
    attention_decode_kernel(AttentionParams p, int64_t q_stride) {
  constexpr int kPer = (D + 31) / 32;  // V dimensions per lane
  constexpr int kChunks = D / 8;       // 16-byte chunks per K row
  // K tiles are staged through shared memory with coalesced loads (rows padded by 16 bytes so
  // that lanes reading different rows hit different banks); after the key loop the same bytes
  // hold the warps' partial outputs.
  constexpr int kRow = D + 8;
  constexpr int kTileBytes = kWarps * 32 * kRow * static_cast<int>(sizeof(T));
  constexpr int kPartBytes = kWarps * G * D * 4;
  __shared__ __align__(16) unsigned char pool[kTileBytes > kPartBytes ? kTileBytes : kPartBytes];
  __shared__ __align__(16) float qs[G][D];
  __shared__ float part_m[kWarps][G], part_l[kWarps][G];
  __shared__ float ws[kWarps][G][32];     // the tile's softmax weights, by key
  __shared__ int64_t rows_s[kWarps][32];  // the tile's cache rows, by key
  const int s = blockIdx.x, kvh = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  T(*ks)[kRow] = reinterpret_cast<T(*)[kRow]>(pool) + warp * 32;
  const int64_t t = p.cu_seqlens_q[s];  // the sequence's one query token
  const int64_t n_keys = p.seq_lens_k[s];
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    const int g = i / D, d = i % D;
    qs[g][d] = ToF32(static_cast<const Tq*>(p.q)[t * q_stride + (kvh * G + g) * D + d]) * p.scale;
  }
  __syncthreads();
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  const int32_t* table = p.block_tables + s * p.block_table_stride;
  float m[G], l[G], acc[G][kPer];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -FLT_MAX;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[g][e] = 0.0f;
  }
  for (int64_t base = int64_t{warp} * 32; base < n_keys; base += kWarps * 32) {
    const int64_t j = base + lane;
    float sc[G];
    int64_t row = -1;
    if (j < n_keys) {
      row = (static_cast<int64_t>(table[j / p.block_size]) * p.block_size + j % p.block_size) *
                p.n_kv_heads +
            kvh;
    }
#pragma unroll 4
    for (int c = lane; c < 32 * kChunks; c += 32) {  // the tile's K rows, 16 lanes per 256 bytes
      const int key = c / kChunks, part = c % kChunks;
      const int64_t r = __shfl_sync(0xffffffffu, row, key);
      if (r >= 0) {
        *reinterpret_cast<uint4*>(&ks[key][part * 8]) =
            *reinterpret_cast<const uint4*>(k_cache + r * D + part * 8);
      }
    }
    __syncwarp();
    if (j < n_keys) {
      const T* k = ks[lane];
#pragma unroll
      for (int g = 0; g < G; ++g) sc[g] = 0.0f;
#pragma unroll 2
      for (int d0 = 0; d0 < D; d0 += 8) {  // 16-byte loads of the K row (D % 8 == 0)
        const uint4 raw = *reinterpret_cast<const uint4*>(k + d0);
        const T* kv = reinterpret_cast<const T*>(&raw);
        float kd[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) kd[u] = ToF32(kv[u]);
#pragma unroll
        for (int g = 0; g < G; ++g) {  // q from shared memory 16 bytes at a time (broadcast)
          const float4 qa = *reinterpret_cast<const float4*>(&qs[g][d0]);
          const float4 qb = *reinterpret_cast<const float4*>(&qs[g][d0 + 4]);
          sc[g] = fmaf(qa.x, kd[0], sc[g]);
          sc[g] = fmaf(qa.y, kd[1], sc[g]);
          sc[g] = fmaf(qa.z, kd[2], sc[g]);
          sc[g] = fmaf(qa.w, kd[3], sc[g]);
          sc[g] = fmaf(qb.x, kd[4], sc[g]);
          sc[g] = fmaf(qb.y, kd[5], sc[g]);
          sc[g] = fmaf(qb.z, kd[6], sc[g]);
          sc[g] = fmaf(qb.w, kd[7], sc[g]);
        }
      }
    } else {
#pragma unroll
      for (int g = 0; g < G; ++g) sc[g] = -FLT_MAX;
    }
    float w[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float m_new = fmaxf(m[g], WarpMax(sc[g]));
      const float corr = __expf(m[g] - m_new);
      w[g] = j < n_keys ? __expf(sc[g] - m_new) : 0.0f;
      l[g] = l[g] * corr + WarpSum(w[g]);
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[g][e] *= corr;
      m[g] = m_new;
    }
#pragma unroll
    for (int g = 0; g < G; ++g) ws[warp][g][lane] = w[g];
    rows_s[warp][lane] = row;
    __syncwarp();
    const int n = n_keys - base < 32 ? static_cast<int>(n_keys - base) : 32;
#pragma unroll 4
    for (int i = 0; i < n; ++i) {  // unrolled: V rows of several keys in flight
      // Lane l owns dimensions [l * kPer, l * kPer + kPer): one load per V row where it can.
      const T* v = v_cache + rows_s[warp][i] * D + lane * kPer;
      float vd[kPer];
      if constexpr (kPer == 4 && D == 128) {
        const uint2 raw = *reinterpret_cast<const uint2*>(v);
        const T* h = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int e = 0; e < 4; ++e) vd[e] = ToF32(h[e]);
      } else if constexpr (kPer == 2 && D == 64) {
        const unsigned raw = *reinterpret_cast<const unsigned*>(v);
        const T* h = reinterpret_cast<const T*>(&raw);
        vd[0] = ToF32(h[0]);
        vd[1] = ToF32(h[1]);
      } else {
#pragma unroll
        for (int e = 0; e < kPer; ++e) vd[e] = lane * kPer + e < D ? ToF32(v[e]) : 0.0f;
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float wi = ws[warp][g][i];
#pragma unroll
        for (int e = 0; e < kPer; ++e) acc[g][e] = fmaf(wi, vd[e], acc[g][e]);
      }
    }
    __syncwarp();  // the next tile overwrites ks
  }
  // Merge the warps' states (part_o reuses the K tiles' bytes: every warp must be done).
  __syncthreads();
  float(*part_o)[G][D] = reinterpret_cast<float(*)[G][D]>(pool);
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      part_m[warp][g] = m[g];
      part_l[warp][g] = l[g];
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int d = lane * kPer + e;
      if (d < D) part_o[warp][g][d] = acc[g][e];
    }
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out);
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    const int g = i / D, d = i % D;
    float mx = -FLT_MAX;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, part_m[w][g]);
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float c = part_l[w][g] > 0.0f ? __expf(part_m[w][g] - mx) : 0.0f;
      sum += part_l[w][g] * c;
      o += part_o[w][g][d] * c;
    }
    out[(t * p.n_heads + kvh * G + g) * D + d] = FromF32<T>(sum > 0.0f ? o / sum : 0.0f);
  }
}

template <typename Tq, typename T, int D>
Status LaunchGroup(const AttentionParams& p, int64_t q_stride, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.n_seqs), static_cast<unsigned>(p.n_kv_heads));
  switch (p.n_heads / p.n_kv_heads) {
    case 1:
      attention_decode_kernel<Tq, T, D, 1><<<grid, kWarps * 32, 0, stream>>>(p, q_stride);
      break;
    case 2:
      attention_decode_kernel<Tq, T, D, 2><<<grid, kWarps * 32, 0, stream>>>(p, q_stride);
      break;
    case 4:
      attention_decode_kernel<Tq, T, D, 4><<<grid, kWarps * 32, 0, stream>>>(p, q_stride);
      break;
    case 8:
      attention_decode_kernel<Tq, T, D, 8><<<grid, kWarps * 32, 0, stream>>>(p, q_stride);
      break;
    default:
      return UnimplementedError("attention_decode_cuda: group size");
  }
  CUDA_RETURN_IF_LAUNCH_ERROR("attention_decode_kernel");
  return Status::Ok();
}

}  // namespace

bool AttentionDecodeApplies(const AttentionParams& p) {
  const int64_t group = p.n_kv_heads > 0 ? p.n_heads / p.n_kv_heads : 0;
  return p.n_tokens == p.n_seqs && p.n_seqs > 0 && p.dtype != DType::kF32 && p.causal &&
         (p.head_dim == 64 || p.head_dim == 80 || p.head_dim == 96 || p.head_dim == 128) &&
         (group == 1 || group == 2 || group == 4 || group == kMaxGroup) &&
         p.n_heads % p.n_kv_heads == 0;
}

Status attention_decode_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!AttentionDecodeApplies(p)) {
    return InvalidArgumentError("attention_decode_cuda: not a decode batch it takes");
  }
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.q_type, [&](auto q_zero) {
    return DispatchDType(p.dtype, [&](auto zero) {
      using Tq = decltype(q_zero);
      using T = decltype(zero);
      switch (p.head_dim) {
        case 64:
          return LaunchGroup<Tq, T, 64>(p, q_stride, stream);
        case 80:
          return LaunchGroup<Tq, T, 80>(p, q_stride, stream);
        case 96:
          return LaunchGroup<Tq, T, 96>(p, q_stride, stream);
        default:
          return LaunchGroup<Tq, T, 128>(p, q_stride, stream);
      }
    });
  });
}

}  // namespace forge::cuda
