// rope_kv_write_cuda: a token's heads (q's, then k's) split over the blocks of grid row y, `units`
// heads each (kUnits for a few tokens; all of them from kWholeTokens tokens, so each token's
// angles are computed once); every block computes the pair angles' sines and cosines (double, like
// rope_ref) into shared memory, rotates its heads in place, then writes the K and V cache rows of
// the k heads it rotated (slot < 0: not written).
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHalf = 512;  // rope_dims / 2
constexpr int kUnits = 4;      // heads per block for fewer than kWholeTokens tokens
// From this many tokens a block takes all of a token's heads. Computing the angles (double) in
// every block of 4 heads made a 2048-token step's rope_kv_write 67 us on an H200 (ncu), against
// about 22 us of memory traffic. A 128-sequence decode step (8B) is faster in blocks of 4 heads:
// 128 blocks of 40 heads took 10.6 us (ncu), and S_TG at 128 sequences rose from 13,307-13,311
// to 13,351-13,404 tokens/s with 1,280 blocks (bench/results/qk-stack-ab-h200-*-s18.txt).
constexpr int64_t kWholeTokens = 256;

// Rotates heads [h0, h1) of token t's row at base (32-bit indices: heads * half < 2^31).
template <typename T>
__device__ void Rotate(void* base, int64_t t, int64_t stride, int h0, int h1, int head_dim,
                       int half, RopeStyle style, const float* cs, const float* sn) {
  T* row = static_cast<T*>(base) + t * stride;
  for (int w = threadIdx.x; w < (h1 - h0) * half; w += blockDim.x) {
    const int h = h0 + w / half, i = w % half;
    T* x = row + static_cast<int64_t>(h) * head_dim;
    const int a = style == RopeStyle::kAdjacent ? 2 * i : i;
    const int b = style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
    const float x0 = ToF32(x[a]), x1 = ToF32(x[b]);
    x[a] = FromF32<T>(x0 * cs[i] - x1 * sn[i]);
    x[b] = FromF32<T>(x0 * sn[i] + x1 * cs[i]);
  }
}

template <typename Tq, typename Ts, typename Tc>
__global__ void __launch_bounds__(kThreads)
    rope_kv_write_kernel(RopeKvWriteParams p, int64_t q_stride, int64_t k_stride, int64_t v_stride,
                         int units) {
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int64_t t = blockIdx.x;
  const RopeParams& r = p.q;
  const int half = static_cast<int>(r.rope_dims / 2);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double inv = pow(static_cast<double>(r.theta), -2.0 * i / r.rope_dims) * r.freq_scale;
    if (r.freq_factors != nullptr) inv /= r.freq_factors[i];
    double s, c;
    sincos(r.positions[t] * inv, &s, &c);
    cs[i] = static_cast<float>(c);
    sn[i] = static_cast<float>(s);
  }
  // Launched as a dependent (pdl.cuh): the angles above read only the step's positions (written
  // before its first kernel) and the frequency factors (weights), so they are computed while the
  // kernel that writes q and k runs; nothing else is read or written before this.
  PdlWait();
  PdlLaunchDependents();
  __syncthreads();
  // Units [u0, u1): q heads first, then k heads.
  const int nq = static_cast<int>(r.n_heads), nk = static_cast<int>(p.k.n_heads);
  const int hd = static_cast<int>(r.head_dim);
  const int u0 = blockIdx.y * units, u1 = min(nq + nk, u0 + units);
  if (u0 < nq) Rotate<Tq>(r.x, t, q_stride, u0, min(u1, nq), hd, half, r.style, cs, sn);
  const int k0 = max(u0, nq) - nq, k1 = u1 - nq;  // this block's k heads
  if (k0 >= k1) return;
  Rotate<Ts>(p.k.x, t, k_stride, k0, k1, hd, half, r.style, cs, sn);
  __syncthreads();  // the rotated k heads are complete
  const int64_t slot = p.kv.slot_mapping[t];
  if (slot < 0 || slot >= p.kv.num_slots) return;
  const int64_t row = p.kv.n_kv_heads * p.kv.head_dim, first = static_cast<int64_t>(k0) * hd;
  const Ts* k = static_cast<const Ts*>(p.kv.k) + t * k_stride + first;
  const Ts* v = static_cast<const Ts*>(p.kv.v) + t * v_stride + first;
  Tc* kc = static_cast<Tc*>(p.kv.k_cache) + slot * row + first;
  Tc* vc = static_cast<Tc*>(p.kv.v_cache) + slot * row + first;
  for (int i = threadIdx.x; i < (k1 - k0) * hd; i += blockDim.x) {
    kc[i] = FromF32<Tc>(ToF32(k[i]));
    vc[i] = FromF32<Tc>(ToF32(v[i]));
  }
}

}  // namespace

Status rope_kv_write_cuda(const RopeKvWriteParams& p, cudaStream_t stream) {
  const RopeParams &q = p.q, &k = p.k;
  if (q.rope_dims <= 0 || q.rope_dims % 2 != 0 || q.rope_dims > q.head_dim ||
      q.rope_dims / 2 > kMaxHalf) {
    return InvalidArgumentError("rope_kv_write_cuda: rope_dims=" + std::to_string(q.rope_dims));
  }
  if (k.positions != q.positions || k.n_tokens != q.n_tokens || k.head_dim != q.head_dim ||
      k.rope_dims != q.rope_dims || k.theta != q.theta || k.freq_scale != q.freq_scale ||
      k.freq_factors != q.freq_factors || k.style != q.style || p.kv.k != k.x ||
      p.kv.src_type != k.dtype || p.kv.n_tokens != q.n_tokens || p.kv.n_kv_heads != k.n_heads ||
      p.kv.head_dim != k.head_dim) {
    return InvalidArgumentError("rope_kv_write_cuda: q, k and the K/V write disagree");
  }
  if (q.n_tokens == 0) return Status::Ok();
  const int64_t q_stride = q.token_stride ? q.token_stride : q.n_heads * q.head_dim;
  const int64_t row = p.kv.n_kv_heads * p.kv.head_dim;
  const int64_t k_stride = k.token_stride ? k.token_stride : k.n_heads * k.head_dim;
  if ((p.kv.k_stride ? p.kv.k_stride : row) != k_stride) {
    return InvalidArgumentError("rope_kv_write_cuda: k strides differ");
  }
  const int64_t v_stride = p.kv.v_stride ? p.kv.v_stride : row;
  if (q.n_heads + k.n_heads > 65535 * int64_t{kUnits} || q.n_tokens > int64_t{1} << 31 ||
      (q.n_heads + k.n_heads) * q.head_dim > int64_t{1} << 30) {
    return InvalidArgumentError("rope_kv_write_cuda: " + std::to_string(q.n_tokens) +
                                " tokens of " + std::to_string(q.n_heads + k.n_heads) + " heads");
  }
  const int per = q.n_tokens >= kWholeTokens ? static_cast<int>(q.n_heads + k.n_heads) : kUnits;
  const int64_t units = (q.n_heads + k.n_heads + per - 1) / per;
  return DispatchDType(q.dtype, [&](auto q_zero) {
    return DispatchDType(k.dtype, [&](auto k_zero) {
      return DispatchDType(p.kv.dtype, [&](auto c_zero) {
        CUDA_RETURN_IF_ERROR(LaunchDependent(
            rope_kv_write_kernel<decltype(q_zero), decltype(k_zero), decltype(c_zero)>,
            dim3(static_cast<unsigned>(q.n_tokens), static_cast<unsigned>(units)), dim3(kThreads),
            0, stream, p, q_stride, k_stride, v_stride, per));
        CUDA_RETURN_IF_LAUNCH_ERROR("rope_kv_write_kernel");
        return Status::Ok();
      });
    });
  });
}

}  // namespace forge::cuda
