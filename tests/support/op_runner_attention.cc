// The op harness's attention runner (op_runner.h): each case's ragged batch over block tables
// scattered through a larger pool, the cache and out in each activation dtype and q in it or in
// F32; the reference is attention_ref (double) run on the host's threads over independent pieces
// of the batch: each window of a sequence's queries with the keys it sees (causal: the keys up to
// its last query; not causal: all of the sequence's keys).
#include <algorithm>
#include <cmath>
#include <string>

#include "base/thread_pool.h"
#include "support/half_data.h"
#include "support/op_buffers.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

namespace forge::testing {
namespace {

constexpr int64_t kWindow = 16;  // queries a reference piece

// A case's batch on the host: query offsets, key counts, scattered block tables, and the
// multiply-adds of its reference.
struct Batch {
  std::vector<int32_t> cu = {0}, lens, tables;
  int64_t width = 1, num_blocks = 0, tokens = 0, cost = 0;
};

Batch MakeBatch(const AttentionCase& c, uint64_t seed) {
  const AttentionCase::Options& o = c.options;
  Batch b;
  int64_t blocks = 0;
  for (auto [pre, q] : c.seqs) {
    b.cu.push_back(b.cu.back() + q);
    b.lens.push_back(pre + q);
    const int64_t nb = (pre + q + o.block_size - 1) / o.block_size;
    b.width = std::max(b.width, nb);
    blocks += nb;
    b.cost += int64_t{q} * (pre + q) * c.n_heads * c.head_dim * 2;
  }
  b.tokens = b.cu.back();
  b.num_blocks = blocks + blocks / 2 + 3;  // scattered over a larger pool
  b.tables = ShuffledBlockTables(b.lens, o.block_size, b.width, b.num_blocks, seed);
  return b;
}

// attention_ref of p (host pointers, F32) into out, in pieces on the host's threads.
void Reference(const AttentionParams& p, const Batch& b, float* out) {
  struct Piece {
    int64_t seq, first, end;  // queries [first, end) of the sequence
  };
  std::vector<Piece> pieces;
  for (int64_t s = 0; s < p.n_seqs; ++s) {
    const int64_t q = b.cu[s + 1] - b.cu[s];
    for (int64_t a = 0; a < q; a += kWindow) pieces.push_back({s, a, std::min(q, a + kWindow)});
  }
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  std::vector<Status> status(pieces.size());
  ThreadPool::Global().ParallelFor(static_cast<int64_t>(pieces.size()), [&](int64_t lo,
                                                                            int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const Piece& pc = pieces[i];
      const int64_t q_len = b.cu[pc.seq + 1] - b.cu[pc.seq], row = b.cu[pc.seq] + pc.first;
      // Causal: queries [first, end) see what they see in the whole chunk when the chunk is
      // taken to end at `end`; not causal: every key of the sequence, wherever the chunk ends.
      const int32_t cu[2] = {0, static_cast<int32_t>(pc.end - pc.first)};
      const int32_t len = static_cast<int32_t>(b.lens[pc.seq] - (p.causal ? q_len - pc.end : 0));
      AttentionParams s = p;
      s.q = static_cast<const float*>(p.q) + row * q_stride;
      s.out = out + row * p.n_heads * p.head_dim;
      s.cu_seqlens_q = cu;
      s.seq_lens_k = &len;
      s.block_tables = b.tables.data() + pc.seq * b.width;
      s.n_seqs = 1;
      s.n_tokens = cu[1];
      s.n_single = 0;
      status[i] = attention_ref(s);
    }
  });
  for (const Status& st : status) EXPECT_TRUE(st.ok()) << st.ToString();
}

std::string Describe(const AttentionCase& c) {
  const AttentionCase::Options& o = c.options;
  std::string s = "heads " + std::to_string(c.n_heads) + " / " + std::to_string(c.n_kv_heads) +
                  " of " + std::to_string(c.head_dim) + ", blocks of " +
                  std::to_string(o.block_size) + ", (cached, new):";
  for (auto [pre, q] : c.seqs) s += " (" + std::to_string(pre) + ", " + std::to_string(q) + ")";
  if (o.n_single) s += ", n_single " + std::to_string(o.n_single);
  if (!o.causal) s += ", not causal";
  if (o.q_pad) s += ", q stride +" + std::to_string(o.q_pad);
  if (o.softcap != 0) s += ", soft-cap " + std::to_string(o.softcap);
  if (o.window) s += ", window " + std::to_string(o.window);
  return s;
}

}  // namespace

void RunAttentionCases(std::span<OpTarget> targets) {
  const std::vector<AttentionCase>& cases = AttentionCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const AttentionCase& c = cases[i];
    const AttentionCase::Options& o = c.options;
    const Batch b = MakeBatch(c, 400 + i);
    const int64_t q_stride = c.n_heads * c.head_dim + o.q_pad;
    const int64_t cache_n = b.num_blocks * o.block_size * c.n_kv_heads * c.head_dim;
    const int64_t out_n = b.tokens * c.n_heads * c.head_dim;
    const std::string what_case = Describe(c);
    ForEachDType(targets, b.cost, [&](DType t, std::span<const OpTarget* const> ts) {
      const DType qt = o.q_f32 ? DType::kF32 : t;
      const std::vector<float> kc = Values(cache_n, 420 + i, t), vc = Values(cache_n, 440 + i, t);
      const std::vector<float> q = Values(b.tokens * q_stride, 460 + i, qt);
      AttentionParams p;
      p.q = q.data();
      p.q_stride = o.q_pad ? q_stride : 0;
      p.k_cache = kc.data();
      p.v_cache = vc.data();
      p.cu_seqlens_q = b.cu.data();
      p.seq_lens_k = b.lens.data();
      p.block_tables = b.tables.data();
      p.block_table_stride = b.width;
      p.n_seqs = static_cast<int64_t>(c.seqs.size());
      p.n_tokens = b.tokens;
      p.n_single = o.n_single;
      p.n_heads = c.n_heads;
      p.n_kv_heads = c.n_kv_heads;
      p.head_dim = c.head_dim;
      p.block_size = o.block_size;
      p.num_blocks = b.num_blocks;
      p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      p.causal = o.causal;
      p.softcap = o.softcap;
      p.window = o.window;
      std::vector<float> want(out_n);
      Reference(p, b, want.data());
      const std::string what = std::string("attention cache ") + DTypeName(t) + " q " +
                               DTypeName(qt) + " | " + what_case;
      for (const OpTarget* tg : ts) {
        OpBuffers buf(*tg->backend);
        p.q = buf.In(q, qt);
        p.k_cache = buf.In(kc, t);
        p.v_cache = buf.In(vc, t);
        p.out = buf.Out("out", t, want, BoundFor({t, qt}));
        p.cu_seqlens_q = buf.In(b.cu);
        p.seq_lens_k = buf.In(b.lens);
        p.block_tables = buf.In(b.tables);
        p.dtype = t;
        p.q_type = qt;
        RunOp(*tg, buf, what, p, &Backend::Attention, tg->attention);
      }
    });
  }
}

}  // namespace forge::testing
