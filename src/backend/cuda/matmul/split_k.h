// How many ways the quantized matmuls split k across CTAs (or a CTA's warps): one cost model,
// host code only, so its rules are unit-tested without a GPU (split_k_test.cc).
//
// The model: a split of s gives each CTA 1/s of a row tile's k (plus a fixed cost: the pipeline's
// start and the reduction of the s partial sums) and multiplies the CTAs by s; the GPU runs the
// CTAs in waves of its resident slots, so the time is waves(s) x (work per CTA(s) + fixed). The
// kernels differ in what they know and in how much a partial wave costs them, which gives three
// forms of the one model:
//   - SplitByFill (the GEMVs: gemv_quant, gemv_quant_reg): the work per CTA is short and memory
//     bound, so the split that fills the resident slots best over whole waves wins; a larger split
//     only where it fills 2% better (each split adds a reduction).
//   - SplitByTime (the fused GEMM, gemm_quant): waves x (units of k per CTA + 1), the smallest split
//     on ties.
//   - SplitInOneWave (the tensor-core matmul, gemm_quant_mma): a second wave would double the time,
//     so the most CTAs a tile that still run in one wave (see its comment).
#pragma once

#include <cstdint>
#include <functional>

namespace forge::cuda {

// How full `ctas` CTAs keep `slots` resident CTA slots over whole waves (1: every wave full).
double WaveFill(int64_t ctas, int64_t slots);

// Among splits 1, 2, 4, ... up to max(1, max_split), the one whose CTAs (ctas(s)) fill `slots`
// best over whole waves; a larger split only where it fills 2% better than the best so far.
int SplitByFill(int max_split, int64_t slots, const std::function<int64_t(int)>& ctas);

// Among splits 1, 2, 4, 8 (at most `units`, each CTA of the split getting some), the one with the
// least waves(tiles x s) x (ceil(units / s) + 1); the smallest on ties.
int SplitByTime(int64_t tiles, int units, int64_t slots);

struct OneWaveSplit {
  int ns = 1;           // CTAs a tile
  bool global = false;  // partial sums meet in global memory (no cluster)
};
// The tensor-core matmul's split of `sbs` super-blocks of k over up to max_split CTAs a tile, for
// `tiles` tiles on `sms` SMs of per_sm resident CTAs each. At two or more CTAs an SM: the largest
// power of two whose CTAs fit the resident slots. At one: the largest ns (2 to max_split) whose
// clusters all fit at once (clusters(ns): how many clusters of ns CTAs are resident, fewer than
// sms / ns where a GPC's SMs are not a multiple of ns); then, with a workspace for global splits
// (`global`), a larger split whose tiles x ns CTAs fit the SMs where its CTAs get fewer
// super-blocks, with the fewest CTAs for that many. The measurements behind it:
// CTAs splitting k (1 to 8): the most that still run in one wave (each split adds a prologue and a
// reduction; a second wave would double the time). At two CTAs per SM a left-over cluster runs
// beside the others' second CTAs, and the resident CTA slots decide (powers of two). At one, a
// left-over cluster idles the GPU for its whole run, so the clusters must all be resident at
// once: clusters(ns) says how many of ns CTAs are, fewer than SMs / ns where a GPC's SMs are not a
// multiple of ns, and any ns from 2 to 8 may be the largest that fits (measured on an H100: Q4_K
// 4096 x 14336 at 128 rows 91.7 -> 85.1 us with clusters counted (2 rather than 4); at 16 rows,
// two CTAs per SM, 31.7 -> 37.3 us had they been counted too). With a workspace (global), a
// split whose partials meet in global memory needs no cluster: any tiles * ns <= SMs is one wave;
// it is taken where its CTAs get fewer super-blocks than the largest resident cluster's (the
// 32-tile matrices of 4096 rows: 4 CTAs of 4 super-blocks, where clusters of 4 do not all fit and
// 3 get 6). H200 at 128 rows (bench/results/mma-global-split-*-s19.txt): Q4_K 4096 x 14336 44.9
// -> 38.4 us, Q6_K 56.0 -> 45.7, 4096 x 4096 18.3 -> 17.5 and 22.1 -> 19.5; S_TG of the 8B
// Q4_K_M at 128 sequences 13,475-13,558 -> 13,611-13,641.
OneWaveSplit SplitInOneWave(int64_t tiles, int sbs, int64_t sms, int per_sm, int max_split,
                            bool global, const std::function<int64_t(int)>& clusters);

}  // namespace forge::cuda
