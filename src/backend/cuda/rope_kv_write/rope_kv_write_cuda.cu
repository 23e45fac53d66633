// rope_kv_write_cuda: one block per token: the pair angles' sines and cosines once (double, like
// rope_ref) into shared memory, q's and k's heads rotated in place, then the token's K and V rows
// converted into the cache at its slot (slot < 0: not written).
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHalf = 512;  // rope_dims / 2

template <typename Tq, typename Tk>
__device__ void Rotate(void* base, int64_t t, int64_t stride, int64_t n_heads, int64_t head_dim,
                       int64_t half, RopeStyle style, const float* cs, const float* sn) {
  for (int64_t w = threadIdx.x; w < n_heads * half; w += blockDim.x) {
    const int64_t h = w / half, i = w % half;
    Tq* x = static_cast<Tq*>(base) + t * stride + h * head_dim;
    const int64_t a = style == RopeStyle::kAdjacent ? 2 * i : i;
    const int64_t b = style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
    const float x0 = ToF32(x[a]), x1 = ToF32(x[b]);
    x[a] = FromF32<Tq>(x0 * cs[i] - x1 * sn[i]);
    x[b] = FromF32<Tq>(x0 * sn[i] + x1 * cs[i]);
  }
}

template <typename Tq, typename Ts, typename Tc>
__global__ void rope_kv_write_kernel(RopeKvWriteParams p, int64_t q_stride, int64_t k_stride,
                                     int64_t v_stride) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  __shared__ float cs[kMaxHalf], sn[kMaxHalf];
  const int64_t t = blockIdx.x;
  const RopeParams& r = p.q;
  const int64_t half = r.rope_dims / 2;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    double inv = pow(static_cast<double>(r.theta), -2.0 * i / r.rope_dims) * r.freq_scale;
    if (r.freq_factors != nullptr) inv /= r.freq_factors[i];
    double s, c;
    sincos(r.positions[t] * inv, &s, &c);
    cs[i] = static_cast<float>(c);
    sn[i] = static_cast<float>(s);
  }
  __syncthreads();
  Rotate<Tq, Tq>(r.x, t, q_stride, r.n_heads, r.head_dim, half, r.style, cs, sn);
  Rotate<Ts, Ts>(p.k.x, t, k_stride, p.k.n_heads, r.head_dim, half, r.style, cs, sn);
  __syncthreads();  // the rotated k row is complete
  const int64_t slot = p.kv.slot_mapping[t];
  if (slot < 0 || slot >= p.kv.num_slots) return;
  const int64_t row = p.kv.n_kv_heads * p.kv.head_dim;
  const Ts* k = static_cast<const Ts*>(p.kv.k) + t * k_stride;
  const Ts* v = static_cast<const Ts*>(p.kv.v) + t * v_stride;
  Tc* kc = static_cast<Tc*>(p.kv.k_cache) + slot * row;
  Tc* vc = static_cast<Tc*>(p.kv.v_cache) + slot * row;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
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
  return DispatchDType(q.dtype, [&](auto q_zero) {
    return DispatchDType(k.dtype, [&](auto k_zero) {
      return DispatchDType(p.kv.dtype, [&](auto c_zero) {
        CUDA_RETURN_IF_ERROR(LaunchDependent(
            rope_kv_write_kernel<decltype(q_zero), decltype(k_zero), decltype(c_zero)>,
            dim3(static_cast<unsigned>(q.n_tokens)), dim3(kThreads), 0, stream, p, q_stride,
            k_stride, v_stride));
        CUDA_RETURN_IF_LAUNCH_ERROR("rope_kv_write_kernel");
        return Status::Ok();
      });
    });
  });
}

}  // namespace forge::cuda
