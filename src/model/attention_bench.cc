// RunAttentionBench: builds each case's paged cache, q and block tables on the backend, then
// times the calls (recorded once in a graph where the backend has graphs, else eager calls),
// the median over trials of (elapsed / calls) after a synchronize.
#include "model/attention_bench.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>

#include "base/half.h"

namespace forge {
namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// n values uniform in [-1, 1) of dtype t at dst: a tile of up to 4M values uploaded repeatedly.
Status FillRandom(Backend& be, void* dst, int64_t n, DType t, uint64_t seed) {
  const int64_t tile = std::min<int64_t>(n, int64_t{1} << 22);
  const size_t es = DTypeSize(t);
  std::vector<uint8_t> host(static_cast<size_t>(tile) * es);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < tile; ++i) {
    const float x = u(rng);
    if (t == DType::kF32) {
      std::memcpy(host.data() + i * 4, &x, 4);
    } else {
      const uint16_t b = t == DType::kF16 ? F32ToF16(x) : F32ToBF16(x);
      std::memcpy(host.data() + i * 2, &b, 2);
    }
  }
  for (int64_t at = 0; at < n; at += tile) {
    const int64_t m = std::min(tile, n - at);
    RETURN_IF_ERROR(be.Upload(static_cast<uint8_t*>(dst) + at * es, host.data(), m * es));
  }
  return Status::Ok();
}

StatusOr<AttentionBenchRow> RunCase(Backend& be, const AttentionBenchCase& c,
                                    const AttentionBenchOptions& o) {
  if (c.n_seqs <= 0 || c.seq_len <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 ||
      o.block_size <= 0 || c.n_heads % c.n_kv_heads != 0) {
    return InvalidArgumentError("attention bench: bad case " + AttentionBenchCaseName(c));
  }
  AttentionBenchRow row;
  row.c = c;
  const int64_t bs = o.block_size, per_seq = (c.seq_len + bs - 1) / bs;
  const int64_t es = static_cast<int64_t>(DTypeSize(o.dtype));
  row.kv_bytes = 2.0 * static_cast<double>(c.n_seqs * c.seq_len * c.n_kv_heads * c.head_dim * es);
  if (c.prefill) {
    row.flops =
        4.0 * c.n_seqs * c.n_heads * static_cast<double>(c.seq_len) * c.seq_len * c.head_dim / 2;
  } else if (o.rotate_bytes > 0) {
    row.copies = static_cast<int>(std::clamp<double>(
        std::ceil(static_cast<double>(o.rotate_bytes) / row.kv_bytes), 1.0, 64.0));
  }
  const int64_t blocks = row.copies * c.n_seqs * per_seq;
  if (blocks > INT32_MAX) return InvalidArgumentError("attention bench: pool too large");
  const int64_t cache_n = blocks * bs * c.n_kv_heads * c.head_dim;
  const int64_t n_tokens = c.prefill ? c.n_seqs * c.seq_len : c.n_seqs;
  const int64_t qo_n = n_tokens * c.n_heads * c.head_dim;

  ASSIGN_OR_RETURN(auto k, be.Alloc(static_cast<size_t>(cache_n * es)));
  ASSIGN_OR_RETURN(auto v, be.Alloc(static_cast<size_t>(cache_n * es)));
  ASSIGN_OR_RETURN(auto q, be.Alloc(static_cast<size_t>(qo_n * DTypeSize(o.q_type))));
  ASSIGN_OR_RETURN(auto out, be.Alloc(static_cast<size_t>(qo_n * es)));
  RETURN_IF_ERROR(FillRandom(be, k->data(), cache_n, o.dtype, o.seed));
  RETURN_IF_ERROR(FillRandom(be, v->data(), cache_n, o.dtype, o.seed + 1));
  RETURN_IF_ERROR(FillRandom(be, q->data(), qo_n, o.q_type, o.seed + 2));

  // Metadata: cu_seqlens_q, seq_lens_k, then one block table per copy, the pool's blocks dealt
  // out in a shuffled order (scattered, as a long-running server's are).
  const int64_t table_n = c.n_seqs * per_seq;
  std::vector<int32_t> meta(2 * c.n_seqs + 1 + row.copies * table_n);
  int32_t* cu = meta.data();
  int32_t* lens = cu + c.n_seqs + 1;
  int32_t* tables = lens + c.n_seqs;
  for (int64_t s = 0; s <= c.n_seqs; ++s) {
    cu[s] = static_cast<int32_t>(s * (c.prefill ? c.seq_len : 1));
  }
  std::fill(lens, lens + c.n_seqs, static_cast<int32_t>(c.seq_len));
  std::iota(tables, tables + blocks, 0);
  std::shuffle(tables, tables + blocks, std::mt19937_64(o.seed + 3));
  ASSIGN_OR_RETURN(auto meta_buf, be.Alloc(meta.size() * 4));
  RETURN_IF_ERROR(be.Upload(meta_buf->data(), meta.data(), meta.size() * 4));
  const int32_t* dmeta = static_cast<const int32_t*>(meta_buf->data());

  std::vector<AttentionParams> calls(row.copies);
  for (int r = 0; r < row.copies; ++r) {
    AttentionParams& p = calls[r];
    p.q = q->data();
    p.k_cache = k->data();
    p.v_cache = v->data();
    p.out = out->data();
    p.cu_seqlens_q = dmeta;
    p.seq_lens_k = dmeta + c.n_seqs + 1;
    p.block_tables = dmeta + 2 * c.n_seqs + 1 + r * table_n;
    p.block_table_stride = per_seq;
    p.n_seqs = c.n_seqs;
    p.n_tokens = n_tokens;
    p.n_heads = c.n_heads;
    p.n_kv_heads = c.n_kv_heads;
    p.head_dim = c.head_dim;
    p.block_size = bs;
    p.num_blocks = blocks;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    p.causal = true;
    p.dtype = o.dtype;
    p.q_type = o.q_type;
  }
  // One eager call of each copy: errors surface here, and lazy setup happens before timing.
  for (const AttentionParams& p : calls) RETURN_IF_ERROR(be.Attention(p));
  RETURN_IF_ERROR(be.Synchronize());

  std::unique_ptr<BackendGraph> graph;
  if (be.SupportsGraphs()) {
    RETURN_IF_ERROR(be.BeginCapture());
    Status st = Status::Ok();
    for (const AttentionParams& p : calls) {
      if (st.ok()) st = be.Attention(p);
    }
    auto g = be.EndCapture();
    RETURN_IF_ERROR(st);
    if (!g.ok()) return g.status();
    graph = std::move(g).value();
    row.graphs = true;
  }
  const int reps = std::max(1, (o.calls_per_trial + row.copies - 1) / row.copies);
  std::vector<double> times;
  for (int trial = -1; trial < std::max(1, o.trials); ++trial) {  // trial -1: warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      if (graph) {
        RETURN_IF_ERROR(graph->Replay());
      } else {
        for (const AttentionParams& p : calls) RETURN_IF_ERROR(be.Attention(p));
      }
    }
    RETURN_IF_ERROR(be.Synchronize());
    if (trial >= 0) times.push_back(Seconds(t0) / (reps * row.copies));
  }
  row.seconds = Median(times);
  return row;
}

}  // namespace

std::vector<AttentionBenchCase> DefaultAttentionBenchCases() {
  return {{false, 64, 4096, 32, 8, 128}, {false, 1, 32768, 32, 8, 128},
          {false, 1, 512, 32, 8, 128},   {false, 1, 2048, 32, 8, 128},
          {true, 2, 8192, 32, 8, 128},   {true, 2, 8192, 32, 32, 128}};
}

std::string AttentionBenchCaseName(const AttentionBenchCase& c) {
  return std::string(c.prefill ? "prefill " : "decode ") + std::to_string(c.n_seqs) + " x " +
         std::to_string(c.seq_len) + (c.prefill ? " causal" : "") + ", " +
         std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " heads, d" +
         std::to_string(c.head_dim);
}

StatusOr<std::vector<AttentionBenchRow>> RunAttentionBench(Backend& backend,
                                                           const AttentionBenchOptions& o) {
  std::vector<AttentionBenchRow> rows;
  for (const AttentionBenchCase& c : o.cases) {
    auto r = RunCase(backend, c, o);
    if (!r.ok()) return r.status().WithContext(AttentionBenchCaseName(c));
    rows.push_back(*r);
  }
  return rows;
}

}  // namespace forge
