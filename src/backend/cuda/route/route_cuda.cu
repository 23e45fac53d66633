// route_cuda: one warp per token; lane l holds experts l, l + 32, ... (up to kMaxExperts / 32
// each) in registers. The softmax's max and sum are warp reductions; the k choices are k rounds of
// a warp arg-max (of equal values the lower expert index), the winner's lane marking it taken.
// Probabilities and weights in F32.
#include <cfloat>
#include <climits>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

constexpr int kPerLane = static_cast<int>(kMaxExperts / 32);

__global__ void route_kernel(RouteParams p) {
  const int64_t t = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (t >= p.n_tokens) return;
  const int E = static_cast<int>(p.n_expert), K = static_cast<int>(p.k);
  const float* logits = p.logits + t * E;
  float prob[kPerLane], sel[kPerLane];
  float mx = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    prob[i] = e < E ? logits[e] : -FLT_MAX;
    mx = fmaxf(mx, prob[i]);
  }
  if (p.gating == ExpertGating::kSoftmax) {
    mx = WarpMax(mx);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      prob[i] = lane + 32 * i < E ? expf(prob[i] - mx) : 0.0f;
      sum += prob[i];
    }
    sum = WarpSum(sum);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) prob[i] /= sum;
  } else if (p.gating == ExpertGating::kSigmoid) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) prob[i] = 1.0f / (1.0f + expf(-prob[i]));
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    sel[i] = e < E ? prob[i] + (p.bias != nullptr ? p.bias[e] : 0.0f) : -FLT_MAX;
  }
  unsigned taken = 0;  // bit i: expert lane + 32 i chosen
  float my_w = 0.0f;   // lane s: slot s's probability
  int my_id = 0;
  for (int s = 0; s < K; ++s) {
    float best = -FLT_MAX;
    int best_e = INT_MAX;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      if (e < E && !(taken >> i & 1u) && (sel[i] > best || best_e == INT_MAX)) {
        best = sel[i];
        best_e = e;
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, off);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, off);
      if (ov > best || (ov == best && oe < best_e)) {
        best = ov;
        best_e = oe;
      }
    }
    float p_best = 0.0f;
    if ((best_e & 31) == lane) {
      const int i = best_e >> 5;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) {
        if (j == i) {
          taken |= 1u << j;
          p_best = prob[j];
        }
      }
    }
    p_best = __shfl_sync(0xffffffffu, p_best, best_e & 31);
    if (lane == s) {
      my_w = p_best;
      my_id = best_e;
    }
  }
  const bool slot = lane < K;
  if (p.gating == ExpertGating::kSoftmaxTopK) {
    const float m = WarpMax(slot ? my_w : -FLT_MAX);
    const float e = slot ? expf(my_w - m) : 0.0f;
    my_w = e / WarpSum(e);
  }
  const float total = WarpSum(slot ? my_w : 0.0f);
  const float div = p.normalize ? fmaxf(total, 6.103515625e-5f) : 1.0f;
  if (slot) {
    p.ids[t * K + lane] = my_id;
    p.weights[t * K + lane] = my_w / div * p.scale;
  }
}

}  // namespace

Status route_cuda(const RouteParams& p, cudaStream_t stream) {
  RETURN_IF_ERROR(ValidateRoute(p));
  if (p.n_tokens == 0) return Status::Ok();
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((p.n_tokens * 32 + threads - 1) / threads);
  route_kernel<<<blocks, threads, 0, stream>>>(p);
  CUDA_RETURN_IF_LAUNCH_ERROR("route_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
