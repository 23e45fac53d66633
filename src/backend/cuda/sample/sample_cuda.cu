// sample_cuda: one block of kThreads threads per row, no global scratch, no host synchronization.
//
// Per row, every pass a read of the row (L2 or HBM):
//   edits: one thread per LogitEdit, in place; then, for a row with an allowed set, one pass
//          writing -inf over every token whose bit is clear (a row naming a bitmask row out of
//          range gets every token masked: error 2).
//   max:   one pass: argmax over OrderKeys packed with the id (ties to the lowest id), and the
//          lowest NaN/+inf index. Greedy rows without logprobs end here.
//   top_k: a histogram of "count buckets" (kCountScale buckets per unit of logit below the max,
//          monotone in the logit) finds the bucket holding the k-th largest logit. When that
//          bucket and the ones above it hold at most kCap tokens (the usual small top_k), one more
//          pass gathers them into shared memory and the rest of the row's work is done there:
//          bitonic sort by (logit desc, id asc), the k-th key, top_p by a scan in that order,
//          min_p, then a sort of the kept tokens by id and the draw by a scan in id order.
//          Otherwise the k-th key is found in the bucket (gather and sort, or a 3-pass radix
//          select over the keys of that bucket when it is crowded with ties) and the dense path
//          below continues with it as a threshold.
//   top_p (dense): a histogram of weight mass over "mass buckets" (kMassScale per nat below the
//          max) of the top_k set finds the bucket where the mass from the top reaches top_p * sum;
//          the bucket's tokens are gathered and sorted (or radix-selected with double masses when
//          crowded) to find the exact logit.
//   draw (dense): one pass sums the kept weights per warp segment (contiguous ids); a scan of the
//          32 segment sums finds the segment where u * sum is crossed, the whole block rescans that
//          segment with a few contiguous ids per thread, and one thread walks its ids.
//   logprobs: the sum of e^(l - max) in double is folded into the last full pass (or is a pass of
//          its own for greedy rows); the top alternatives reuse the count-bucket selection.
// Sums in double are not taken in the CPU's order, as the header allows: results differ from the
// CPU's only where a draw or a top_p cut is within double rounding of a boundary. The draw, log Z
// and the scans are in a fixed order; the top_p mass histogram adds with shared-memory atomics, so
// which side of such a boundary a dense top_p cut falls on may also vary from run to run. Weights
// use the CPU's float polynomial (sampling::ExpNonPositive) bit for bit.
#include "backend/cuda/sample/sample_cuda.h"

#include <cfloat>
#include <climits>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/sample/sample_block.cuh"

namespace forge::cuda {
namespace {

using namespace sample_block;  // NOLINT: the kernel's own building blocks

// ---- Passes over the row ----

constexpr int kLoadBatch = 4;  // float4 loads a thread issues before using them

// Calls f(ok, i, x[i]) for every i in [0, n) with float4 loads where aligned. Whole warps call f
// together (ok = false on lanes without an element), so f may use warp collectives.
template <typename F>
__device__ __forceinline__ void ForEachLogit(const float* x, int n, F&& f) {
  const int t = static_cast<int>(threadIdx.x);
  const int lane = Lane();
  const int misaligned = static_cast<int>(reinterpret_cast<uintptr_t>(x) & 15);
  const int head = min(n, ((16 - misaligned) & 15) >> 2);
  const int nv = (n - head) >> 2;
  const int tail = head + 4 * nv;
  if (t < 32) {  // the unaligned head and the tail, fewer than 4 elements each
    const bool h = lane < head;
    f(h, lane, h ? x[lane] : 0.0f);
    const bool tv = tail + lane < n;
    f(tv, tail + lane, tv ? x[tail + lane] : 0.0f);
  }
  // kLoadBatch loads in flight per thread before any f: one block reads a 128k-entry row in 8
  // round trips, not 32. Each thread still takes its elements in ascending order; the extra calls
  // past the row's end have ok = false on every lane.
  const float4* v = reinterpret_cast<const float4*>(x + head);
  for (int j0 = t; j0 - lane < nv; j0 += kLoadBatch * kThreads) {  // warp-uniform bound
    float4 q[kLoadBatch];
#pragma unroll
    for (int b = 0; b < kLoadBatch; ++b) {
      const int j = j0 + b * kThreads;
      q[b] = j < nv ? v[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int b = 0; b < kLoadBatch; ++b) {
      const int j = j0 + b * kThreads;
      const bool ok = j < nv;
      const int i = head + 4 * j;
      f(ok, i, q[b].x);
      f(ok, i + 1, q[b].y);
      f(ok, i + 2, q[b].z);
      f(ok, i + 3, q[b].w);
    }
  }
}

// Warp segments: warp w owns ids [w * seg, (w + 1) * seg), a multiple of kThreads long.
__device__ __forceinline__ int SegmentLength(int n) {
  return ((n + kWarps - 1) / kWarps + kThreads - 1) / kThreads * kThreads;
}

__device__ void ZeroHist(Shared& sm, bool mass) {
  __syncthreads();  // whatever the union held is dead
  for (int b = static_cast<int>(threadIdx.x); b < kBins; b += kThreads) {
    sm.u.hist.count[b] = 0;
    if (mass) sm.u.hist.mass[b] = 0.0;
  }
  __syncthreads();
}

// The first bin in index order (bin 0 = the highest logits) where cum0 + the bins so far reach
// target, in sm.fb_bin (-1: none) with the total before it in sm.fb_cum; the last nonempty bin in
// sm.fb_last / sm.fb_last_cum. Empty bins are never picked.
template <typename T>
__device__ void FindBin(const T* hist, T cum0, T target, Shared& sm) {
  const int t = static_cast<int>(threadIdx.x);
  const T a = hist[2 * t], b = hist[2 * t + 1];
  T excl, total;
  BlockExclusiveScan(a + b, excl, total, sm);
  const T c = cum0 + excl;
  const T ca = c + a;
  int pick = INT_MAX;
  if (a > T(0) && ca >= target) {
    pick = 2 * t;
  } else if (b > T(0) && ca + b >= target) {
    pick = 2 * t + 1;
  }
  const int last = b > T(0) ? 2 * t + 1 : (a > T(0) ? 2 * t : -1);
  const int best = BlockReduce(pick, MinOp{}, sm);
  const int best_last = BlockReduce(last, MaxOp{}, sm);
  if (best != INT_MAX && pick == best) {
    sm.fb_bin = pick;
    sm.fb_cum = static_cast<double>(pick == 2 * t ? c : ca);
  }
  if (best == INT_MAX && t == 0) sm.fb_bin = -1;
  if (best_last >= 0 && last == best_last) {
    sm.fb_last = last;
    sm.fb_last_cum = static_cast<double>(last == 2 * t ? c : ca);
  }
  if (best_last < 0 && t == 0) sm.fb_last = -1;
  __syncthreads();
}

// Count histogram of count buckets over the whole row.
__device__ void CountHistogram(const Row& r, Shared& sm) {
  ZeroHist(sm, false);
  int* count = sm.u.hist.count;
  ForEachLogit(r.x, r.n, [&](bool ok, int, float l) {
    const int bin = ok ? BucketOf(l, r.max, kCountScale) : -1;
    const int bin0 = __shfl_sync(kFull, bin, 0);
    if (__all_sync(kFull, bin == bin0)) {  // ties and masked rows: one atomic per warp
      if (Lane() == 0 && bin0 >= 0) atomicAdd(&count[bin0], 32);
    } else if (bin >= 0) {
      atomicAdd(&count[bin], 1);
    }
  });
  __syncthreads();
}

// Appends `pack` to sm.u.packs for the lanes that take (one atomic per warp).
__device__ __forceinline__ void Append(bool take, unsigned long long pack, Shared& sm) {
  const unsigned m = __ballot_sync(kFull, take);
  if (m == 0) return;
  const int leader = __ffs(m) - 1;
  int base = 0;
  if (Lane() == leader) base = atomicAdd(&sm.n_gathered, __popc(m));
  base = __shfl_sync(kFull, base, leader);
  if (take) {
    const int slot = base + __popc(m & LanesBelow());
    if (slot < kCap) sm.u.packs[slot] = pack;
  }
}

// Gathers the tokens with pred(l, key) into sm.u.packs (by logit), in no particular order;
// returns how many (at most kCap). With want_z, also adds e^(l - max) of every token to z.
template <typename Pred>
__device__ int Gather(const Row& r, Pred pred, bool want_z, double& z, Shared& sm) {
  __syncthreads();  // whatever the union held is dead
  if (threadIdx.x == 0) sm.n_gathered = 0;
  __syncthreads();
  ForEachLogit(r.x, r.n, [&](bool ok, int i, float l) {
    if (want_z && ok) z += exp(static_cast<double>(l) - r.max_d);
    const int key = OrderKey(l);
    Append(ok && pred(l, key), PackByLogit(key, i), sm);
  });
  __syncthreads();
  return min(sm.n_gathered, kCap);
}

// Sorts sm.u.packs[0, m) in decreasing order (bitonic, padded with zeros to a power of two).
__device__ void SortDescending(Shared& sm, int m) {
  unsigned long long* a = sm.u.packs;
  int p = 1;
  while (p < m) p <<= 1;
  for (int j = m + static_cast<int>(threadIdx.x); j < p; j += kThreads) a[j] = 0;
  for (int size = 2; size <= p; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int t = static_cast<int>(threadIdx.x); t < (p >> 1); t += kThreads) {
        const int lo = ((t & ~(stride - 1)) << 1) | (t & (stride - 1));
        const int hi = lo + stride;
        const unsigned long long x = a[lo], y = a[hi];
        const bool descending = (lo & size) == 0;
        if ((x < y) == descending) {
          a[lo] = y;
          a[hi] = x;
        }
      }
    }
  }
  __syncthreads();
}

// Over entries [0, m) of shared memory in order, each of value val(j) >= 0: the first j where
// cum0 + the values up to and including j exceed (kStrict) or reach target_of(the total of all
// m values); -1 if none.
template <bool kStrict, typename Val, typename TargetOf>
__device__ int ScanFind(Shared& sm, int m, Val val, double cum0, TargetOf target_of) {
  const int per = (m + kThreads - 1) / kThreads;
  const int lo = min(m, static_cast<int>(threadIdx.x) * per);
  const int hi = min(m, lo + per);
  double s = 0.0;
  for (int j = lo; j < hi; ++j) s += val(j);
  double excl, total;
  BlockExclusiveScan(s, excl, total, sm);
  const double target = target_of(total);
  double cum = cum0 + excl;
  int hit = INT_MAX;
  for (int j = lo; j < hi; ++j) {
    cum += val(j);
    if (kStrict ? cum > target : cum >= target) {
      hit = j;
      break;
    }
  }
  hit = BlockReduce(hit, MinOp{}, sm);
  return hit == INT_MAX ? -1 : hit;
}

// Adds 1 (and w when kMass) to bin `bin` for the lanes that take, one atomic per distinct bin of
// the warp: for histograms crowded with ties.
template <bool kMass>
__device__ __forceinline__ void AggregatedAdd(bool take, int bin, float w, Shared& sm) {
  unsigned todo = __ballot_sync(kFull, take);
  while (todo != 0) {
    const int leader = __ffs(todo) - 1;
    const int lb = __shfl_sync(kFull, bin, leader);
    const bool mine = take && bin == lb;
    const unsigned group = __ballot_sync(kFull, mine);
    if constexpr (kMass) {
      const double s = WarpReduce(mine ? static_cast<double>(w) : 0.0, SumOp{});
      if (Lane() == leader) atomicAdd(&sm.u.hist.mass[lb], s);
    }
    if (Lane() == leader) atomicAdd(&sm.u.hist.count[lb], __popc(group));
    todo &= ~group;
  }
}

// Radix select over the keys of the tokens with pred(l, key): the key at which the running count
// (kMass: weight mass) from the largest key down, starting at cum, first reaches target. Three
// passes of 11, 11 and 10 bits. A mass target that rounding leaves unreached at some digit falls
// to the smallest key present there.
template <bool kMass, typename Pred>
__device__ int RadixSelect(const Row& r, Pred pred, double cum, double target, Shared& sm) {
  unsigned prefix = 0, mask = 0;
  for (int level = 0; level < 3; ++level) {
    const int shift = level == 0 ? 21 : (level == 1 ? 10 : 0);
    const int nb = level == 2 ? 1024 : 2048;
    ZeroHist(sm, kMass);
    ForEachLogit(r.x, r.n, [&](bool ok, int, float l) {
      const int key = OrderKey(l);
      const unsigned ub = static_cast<unsigned>(key) ^ 0x80000000u;
      const bool take = ok && (ub & mask) == prefix && pred(l, key);
      const int bin = nb - 1 - static_cast<int>((ub >> shift) & static_cast<unsigned>(nb - 1));
      AggregatedAdd<kMass>(take, bin, kMass && take ? Weight(r, l) : 0.0f, sm);
    });
    __syncthreads();
    if constexpr (kMass) {
      FindBin<double>(sm.u.hist.mass, cum, target, sm);
    } else {
      FindBin<int>(sm.u.hist.count, static_cast<int>(cum), static_cast<int>(target), sm);
    }
    int bin = sm.fb_bin;
    double bin_cum = sm.fb_cum;
    if (bin < 0) {
      bin = sm.fb_last;
      bin_cum = sm.fb_last_cum;
    }
    if (bin < 0) break;  // no token passes pred: not reached by the callers
    prefix |= static_cast<unsigned>(nb - 1 - bin) << shift;
    mask |= static_cast<unsigned>(nb - 1) << shift;
    cum = bin_cum;
  }
  return static_cast<int>(prefix ^ 0x80000000u);
}

// The need-th largest key (with multiplicity) among the tokens of count bucket b, which holds
// count_b tokens.
__device__ int KthKeyInBucket(const Row& r, int b, int need, int count_b, Shared& sm) {
  auto in_bucket = [&](float l, int) { return BucketOf(l, r.max, kCountScale) == b; };
  if (count_b <= kCap) {
    double unused = 0.0;
    const int m = Gather(r, in_bucket, false, unused, sm);
    SortDescending(sm, m);
    return PackedKey(sm.u.packs[max(0, min(need, m) - 1)]);
  }
  return RadixSelect<false>(r, in_bucket, 0.0, static_cast<double>(need), sm);
}

// Dense top_p over the tokens with key >= kth_key: the largest logit key v such that the weight
// of those tokens with logit >= v reaches top_p times their total; kNegInfKey (no cut) when
// rounding leaves the target unreached.
__device__ int TopPKey(const Row& r, int kth_key, double top_p, Shared& sm) {
  const float scale = __fmul_rn(r.inv_t, kMassScale);
  ZeroHist(sm, true);
  int* count = sm.u.hist.count;
  double* mass = sm.u.hist.mass;
  double s = 0.0;
  ForEachLogit(r.x, r.n, [&](bool ok, int, float l) {
    const float w = ok ? Weight(r, l) : 0.0f;
    const bool take = ok && OrderKey(l) >= kth_key && w > 0.0f;
    const int bin = take ? BucketOf(l, r.max, scale) : -1;
    if (take) s += w;
    const int bin0 = __shfl_sync(kFull, bin, 0);
    if (__all_sync(kFull, bin == bin0)) {
      if (bin0 >= 0) {
        const double ws = WarpReduce(static_cast<double>(w), SumOp{});
        if (Lane() == 0) {
          atomicAdd(&mass[bin0], ws);
          atomicAdd(&count[bin0], 32);
        }
      }
    } else if (take) {
      atomicAdd(&mass[bin], static_cast<double>(w));
      atomicAdd(&count[bin], 1);
    }
  });
  __syncthreads();
  const double target = top_p * BlockReduce(s, SumOp{}, sm);
  FindBin<double>(mass, 0.0, target, sm);
  const int b = sm.fb_bin;
  if (b < 0) return kNegInfKey;
  const double cum = sm.fb_cum;
  const int count_b = count[b];
  auto in_bucket = [&](float l, int key) {
    return key >= kth_key && Weight(r, l) > 0.0f && BucketOf(l, r.max, scale) == b;
  };
  if (count_b <= kCap) {
    double unused = 0.0;
    const int m = Gather(r, in_bucket, false, unused, sm);
    SortDescending(sm, m);
    const unsigned long long* a = sm.u.packs;
    const int hit = ScanFind<false>(
        sm, m, [&](int j) { return static_cast<double>(Weight(r, FromOrderKey(PackedKey(a[j])))); },
        cum, [&](double) { return target; });
    return PackedKey(a[hit >= 0 ? hit : max(m - 1, 0)]);  // unreached: the bucket's smallest
  }
  return RadixSelect<true>(r, in_bucket, cum, target, sm);
}

// The draw over the kept set {key >= thr, w > 0} in id order.
__device__ int DenseDraw(const Row& r, int thr, double u, bool want_z, double& z, Shared& sm) {
  auto kept_weight = [&](float l) {
    const float w = Weight(r, l);
    return OrderKey(l) >= thr && w > 0.0f ? w : 0.0f;
  };
  const int seg = SegmentLength(r.n);
  const int q = seg / kThreads;
  {
    const int begin = Warp() * seg;
    const int end = min(r.n, begin + seg);
    double s = 0.0;
#pragma unroll 4
    for (int i = begin + Lane(); i < end; i += 32) {
      const float l = r.x[i];
      s += kept_weight(l);
      if (want_z) z += exp(static_cast<double>(l) - r.max_d);
    }
    s = WarpReduce(s, SumOp{});
    if (Lane() == 0) sm.seg_sum[Warp()] = s;
  }
  __syncthreads();
  if (Warp() == 0) {  // the segment where the running sum crosses u * sum
    const double v = sm.seg_sum[Lane()];
    const double incl = WarpInclusiveScan(v);
    double excl = __shfl_up_sync(kFull, incl, 1);
    if (Lane() == 0) excl = 0.0;
    const double target = u * __shfl_sync(kFull, incl, 31);
    const unsigned cross = __ballot_sync(kFull, v > 0.0 && incl > target);
    const unsigned nonzero = __ballot_sync(kFull, v > 0.0);
    const int c = cross != 0 ? __ffs(cross) - 1 : (nonzero != 0 ? 31 - __clz(nonzero) : -1);
    const double base = __shfl_sync(kFull, excl, c < 0 ? 0 : c);
    if (Lane() == 0) {
      sm.choice = c;
      sm.base = base;
      sm.target = target;
    }
  }
  __syncthreads();
  const int c = sm.choice;
  if (c < 0) return r.argmax;  // nothing kept: not reached (the argmax always is)
  const double base = sm.base, target = sm.target;
  // The whole block rescans segment c, q contiguous ids per thread.
  const int t = static_cast<int>(threadIdx.x);
  const int lo = min(r.n, c * seg + t * q);
  const int hi = min(r.n, lo + q);
  double s = 0.0;
  for (int i = lo; i < hi; ++i) s += kept_weight(r.x[i]);
  double excl, total;
  BlockExclusiveScan(s, excl, total, sm);
  const double cum = base + excl;
  const int cross = BlockReduce(s > 0.0 && cum + s > target ? t : INT_MAX, MinOp{}, sm);
  const int last = BlockReduce(s > 0.0 ? t : -1, MaxOp{}, sm);
  const int chosen = cross != INT_MAX ? cross : last;  // none crosses (rounding): the last kept
  if (chosen < 0) return r.argmax;                     // not reached
  if (t == chosen) {
    double run = cum;
    int token = -1, last_kept = -1;
    for (int i = lo; i < hi; ++i) {
      const float w = kept_weight(r.x[i]);
      if (w > 0.0f) {
        run += w;
        last_kept = i;
        if (run > target) {
          token = i;
          break;
        }
      }
    }
    sm.token = token >= 0 ? token : last_kept;
  }
  __syncthreads();
  return sm.token;
}

// top_k with the k-th largest logit in count bucket b, and the tokens of buckets <= b few enough
// to sort in shared memory: the whole truncation and the draw happen there.
__device__ int SparseSample(const Row& r, const SampleRow& row, int b, bool want_z, double& z,
                            Shared& sm) {
  const int m = Gather(
      r, [&](float l, int) { return BucketOf(l, r.max, kCountScale) <= b; }, want_z, z, sm);
  SortDescending(sm, m);
  unsigned long long* a = sm.u.packs;
  const int kth = PackedKey(a[min(row.top_k, m) - 1]);
  auto weight_at = [&](int j) { return Weight(r, FromOrderKey(PackedKey(a[j]))); };
  // The top_k set: the sorted prefix with key >= kth.
  int m_k = 0;
  for (int j = static_cast<int>(threadIdx.x); j < m; j += kThreads) {
    if (PackedKey(a[j]) >= kth) m_k = max(m_k, j + 1);
  }
  m_k = BlockReduce(m_k, MaxOp{}, sm);
  int thr = kth;
  if (row.top_p < 1.0) {
    const int hit = ScanFind<false>(
        sm, m_k, [&](int j) { return static_cast<double>(weight_at(j)); }, 0.0,
        [&](double total) { return row.top_p * total; });
    if (hit >= 0) thr = max(thr, PackedKey(a[hit]));
  }
  if (row.min_p > 0.0) thr = max(thr, MinPKey(r.max, row.min_p_offset));
  // Kept: key >= thr and w > 0, both monotone in the logit, so a prefix of the sorted tokens.
  int m_kept = 0;
  for (int j = static_cast<int>(threadIdx.x); j < m_k; j += kThreads) {
    if (PackedKey(a[j]) >= thr && weight_at(j) > 0.0f) m_kept = max(m_kept, j + 1);
  }
  m_kept = BlockReduce(m_kept, MaxOp{}, sm);
  if (m_kept == 0) return r.argmax;  // not reached: the argmax is always kept
  for (int j = static_cast<int>(threadIdx.x); j < m_kept; j += kThreads) {
    const unsigned long long p = a[j];
    a[j] = PackById(PackedKey(p), PackedId(p));
  }
  SortDescending(sm, m_kept);  // ascending ids
  const int hit = ScanFind<true>(
      sm, m_kept,
      [&](int j) { return static_cast<double>(Weight(r, FromOrderKey(IdPackedKey(a[j])))); }, 0.0,
      [&](double total) { return row.u * total; });
  return IdPackedId(a[hit >= 0 ? hit : m_kept - 1]);
}

// The top `want` tokens by (logit desc, id asc) given the want-th largest key kth: those above kth
// and the lowest-id ties at kth (none when kth is -inf), sorted into sm.u.packs; returns how many.
__device__ int CollectTop(const Row& r, int kth, int want, Shared& sm) {
  __syncthreads();  // whatever the union held is dead
  if (threadIdx.x == 0) sm.n_gathered = 0;
  __syncthreads();
  const bool ties = kth != kNegInfKey;
  const int seg = SegmentLength(r.n);
  const int begin = Warp() * seg;
  const int end = min(r.n, begin + seg);
  int ties_seen = 0;
  for (int i0 = begin; i0 < end; i0 += 32) {  // ascending ids, the same trip count per warp
    const int i = i0 + Lane();
    const bool ok = i < end;
    const int key = ok ? OrderKey(r.x[i]) : kNegInfKey;
    Append(key > kth, PackByLogit(key, i), sm);  // fewer than `want` in all
    const bool tie = ties && ok && key == kth;
    const unsigned m = __ballot_sync(kFull, tie);
    if (tie) {
      const int pos = ties_seen + __popc(m & LanesBelow());
      if (pos < want) sm.tie_ids[Warp()][pos] = i;
    }
    ties_seen += __popc(m);
  }
  if (Lane() == 0) sm.tie_count[Warp()] = min(ties_seen, want);
  __syncthreads();
  if (threadIdx.x == 0) {  // the lowest-id ties: warp segments in order
    int m = min(sm.n_gathered, want);
    for (int w = 0; w < kWarps && m < want; ++w) {
      for (int p = 0; p < sm.tie_count[w] && m < want; ++p) {
        sm.u.packs[m++] = PackByLogit(kth, sm.tie_ids[w][p]);
      }
    }
    sm.n_gathered = m;
  }
  __syncthreads();
  const int m = sm.n_gathered;
  SortDescending(sm, m);
  return m;
}

// The top min(want, n) tokens by (logit desc, id asc) without -inf, sorted into sm.u.packs;
// returns how many.
__device__ int TopLogprobs(const Row& r, int want, Shared& sm) {
  want = min(want, r.n);
  CountHistogram(r, sm);
  FindBin<int>(sm.u.hist.count, 0, want, sm);
  const int b = sm.fb_bin;
  const int above = static_cast<int>(sm.fb_cum);
  const int count_b = sm.u.hist.count[b];
  if (above + count_b <= kCap) {
    double unused = 0.0;
    const int m = Gather(
        r, [&](float l, int) { return BucketOf(l, r.max, kCountScale) <= b; }, false, unused, sm);
    SortDescending(sm, m);
    int finite = 0;
    for (int j = static_cast<int>(threadIdx.x); j < min(want, m); j += kThreads) {
      if (PackedKey(sm.u.packs[j]) > kNegInfKey) finite = max(finite, j + 1);
    }
    return BlockReduce(finite, MaxOp{}, sm);
  }
  const int kth = KthKeyInBucket(r, b, want - above, count_b, sm);
  return CollectTop(r, kth, want, sm);
}

__global__ void __launch_bounds__(kThreads, 1)
    sample_kernel(float* logits, int n, int64_t stride, const SampleRow* rows,
                  const LogitEdit* edits, SampleOut* out, const uint32_t* allowed,
                  int64_t allowed_words, int64_t allowed_rows) {
  __shared__ Shared sm;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t row_index = blockIdx.x;
  float* x = logits + row_index * stride;
  const SampleRow row = rows[row_index];
  SampleOut* o = out + row_index;

  // 1. Edits, in place (distinct tokens: no two threads write one logit).
  for (int e = row.edit_begin + t; e < row.edit_end; e += kThreads) {
    const LogitEdit ed = edits[e];
    if (ed.token < 0 || ed.token >= n) continue;
    double d = __fadd_rn(x[ed.token], ed.bias);
    if (ed.repetition != 1.0) {
      d = d > 0.0 ? __ddiv_rn(d, ed.repetition) : __dmul_rn(d, ed.repetition);
    }
    d = __dsub_rn(d, ed.subtract);
    x[ed.token] = ed.mask != 0 ? -INFINITY : __double2float_rn(d);
  }
  __syncthreads();
  if (row.allowed_row >= 0) {  // the same for the whole block
    const bool valid = row.allowed_row < allowed_rows && allowed != nullptr;
    const uint32_t* bits = allowed + (valid ? row.allowed_row * allowed_words : 0);
    for (int i = t; i < n; i += kThreads) {  // a warp reads one word, writes 32 logits
      if (!valid || ((bits[i >> 5] >> (i & 31)) & 1u) == 0) x[i] = -INFINITY;
    }
    __syncthreads();
  }

  // 2. Max, argmax (ties to the lowest id) and the lowest NaN / +inf index, in one pass.
  unsigned long long best = 0;
  int bad = INT_MAX;
  ForEachLogit(x, n, [&](bool ok, int i, float v) {
    if (!ok) return;
    if (!(v < INFINITY)) {
      bad = min(bad, i);
    } else {
      const unsigned long long p = PackByLogit(OrderKey(v), i);
      best = p > best ? p : best;
    }
  });
  best = BlockReduce(best, MaxOp{}, sm);
  bad = BlockReduce(bad, MinOp{}, sm);
  const bool failed = bad != INT_MAX || PackedKey(best) == kNegInfKey;

  Row r;
  r.x = x;
  r.n = n;
  r.max = FromOrderKey(PackedKey(best));
  r.max_d = static_cast<double>(r.max);
  r.inv_t = row.inv_t;
  r.argmax = PackedId(best);

  int token = r.argmax;
  double logprob = 0.0, log_z = 0.0;
  int n_top = 0;
  if (!failed) {
    // 3. The token.
    const bool want_z = row.logprobs != 0;
    double z = 0.0;
    bool z_done = false;
    if (row.greedy == 0) {
      int thr = kNegInfKey;
      bool drawn = false;
      if (row.top_k > 0 && row.top_k < n) {
        CountHistogram(r, sm);
        FindBin<int>(sm.u.hist.count, 0, row.top_k, sm);
        const int b = sm.fb_bin;
        const int above = static_cast<int>(sm.fb_cum);
        const int count_b = sm.u.hist.count[b];
        if (above + count_b <= kCap) {
          token = SparseSample(r, row, b, want_z, z, sm);
          z_done = drawn = true;
        } else {
          thr = KthKeyInBucket(r, b, row.top_k - above, count_b, sm);
        }
      }
      if (!drawn) {
        if (row.top_p < 1.0) thr = max(thr, TopPKey(r, thr, row.top_p, sm));
        if (row.min_p > 0.0) thr = max(thr, MinPKey(r.max, row.min_p_offset));
        token = DenseDraw(r, thr, row.u, want_z, z, sm);
        z_done = true;
      }
    }
    // 4. Log-probabilities over the processed logits at temperature 1.
    if (want_z) {
      if (!z_done) {
        ForEachLogit(x, n, [&](bool ok, int, float l) {
          if (ok) z += exp(static_cast<double>(l) - r.max_d);
        });
      }
      log_z = r.max_d + log(BlockReduce(z, SumOp{}, sm));
      logprob = static_cast<double>(x[token]) - log_z;
      const int want = min(max(row.top_logprobs, 0), kSampleMaxTop);
      if (want > 0) n_top = TopLogprobs(r, want, sm);
    }
  }

  if (t < kSampleMaxTop) {
    int id = 0;
    double lp = 0.0;
    if (t < n_top) {
      const unsigned long long p = sm.u.packs[t];
      id = PackedId(p);
      lp = static_cast<double>(FromOrderKey(PackedKey(p))) - log_z;
    }
    o->top_tokens[t] = id;
    o->top_logprobs[t] = lp;
  }
  if (t == 0) {
    o->token = failed ? -1 : token;
    o->error = bad != INT_MAX ? 1 : (failed ? 2 : 0);
    o->error_index = bad != INT_MAX ? bad : -1;
    o->n_top = n_top;
    o->logprob = logprob;
  }
}

}  // namespace

Status sample_cuda(const SampleParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return Status::Ok();
  const int64_t stride = p.row_stride == 0 ? p.n_vocab : p.row_stride;
  if (p.n_rows < 0 || p.n_rows > INT32_MAX) {
    return InvalidArgumentError("sample_cuda: n_rows=" + std::to_string(p.n_rows) +
                                " must be in [0, 2^31)");
  }
  if (p.n_vocab < 1 || p.n_vocab > (int64_t{1} << 30)) {
    return InvalidArgumentError("sample_cuda: n_vocab=" + std::to_string(p.n_vocab) +
                                " must be in [1, 2^30]");
  }
  if (stride < p.n_vocab) {
    return InvalidArgumentError("sample_cuda: row_stride=" + std::to_string(p.row_stride) +
                                " is less than n_vocab=" + std::to_string(p.n_vocab));
  }
  if (p.logits == nullptr || p.rows == nullptr || p.out == nullptr) {
    return InvalidArgumentError("sample_cuda: logits, rows and out must be set");
  }
  if (p.allowed_rows > 0 && (p.allowed == nullptr || p.allowed_words * 32 < p.n_vocab)) {
    return InvalidArgumentError("sample_cuda: allowed bitmask rows of " +
                                std::to_string(p.allowed_words) + " words for n_vocab=" +
                                std::to_string(p.n_vocab));
  }
  sample_kernel<<<static_cast<unsigned>(p.n_rows), kThreads, 0, stream>>>(
      p.logits, static_cast<int>(p.n_vocab), stride, p.rows, p.edits, p.out, p.allowed,
      p.allowed_words, p.allowed_rows);
  CUDA_RETURN_IF_LAUNCH_ERROR("sample_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
