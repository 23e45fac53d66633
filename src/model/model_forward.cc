// The llama-family forward pass, written once over Backend ops, run op by op (eager) or, for
// decode steps on a backend with graphs, recorded once per (batch bucket, table width) and
// replayed with the step's metadata uploaded into the graph's own buffer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <numeric>

#include "model/model.h"

namespace forge {
namespace {

// Decode batch sizes a graph is recorded for; a step runs in the smallest bucket that holds it.
constexpr int64_t kGraphBuckets[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};

int64_t GraphBucket(int64_t n) {
  for (int64_t b : kGraphBuckets) {
    if (b >= n) return b;
  }
  return 0;
}

int64_t PowerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Layout of one step's metadata in an int32 buffer: ids, pos, slots [T]; cu [S + 1]; lens [S];
// tables [S, W]; out_idx [n_out].
int64_t MetaInts(int64_t T, int64_t S, int64_t W, int64_t n_out) {
  return 3 * T + (S + 1) + S + S * W + n_out;
}

}  // namespace

Status Model::RunLayers(Rank& r, const StepMeta& s, KvCache& cache) {
  const ModelConfig& c = r.shard.config;  // the shard's head counts, n_ff and vocabulary rows
  const ModelWeights& weights = r.weights;
  Backend& be = *r.backend;
  const DType a = dtype_;
  const int64_t T = s.n_tokens;
  const int rank = r.index;
  const bool parallel = tensor_parallel() > 1;
  float* x = r.x->f32();
  void* xn = r.xn->data();
  const int64_t qkv_dim = c.q_dim() + 2 * c.kv_dim();
  void* attn = r.attn->data();
  void* act = r.act->data();
  // Products that feed an elementwise op or the residual stay F32 (q/k/v, gate/up, the o and
  // down outputs): each rounding to a half type costs accuracy, and these buffers are small next
  // to the weights. Only GEMM inputs (xn, attn, act) and the KV cache are in the dtype.
  float* delta = r.delta->f32();
  // One-token steps: where the backend's matmul of a weight reads its activation row in a form
  // of its own (Backend::QuantizedActivationBytes), the op that writes xn or act writes that form
  // too (once, instead of in every matmul that reads the row), and those matmuls take it.
  auto takes_q = [&](const WeightView& w, const std::unique_ptr<BackendBuffer>& buf) {
    if (T != 1 || buf == nullptr || w.data == nullptr) return false;
    const int64_t need = be.QuantizedActivationBytes(w, 1, a, DType::kF32);
    return need > 0 && need <= static_cast<int64_t>(buf->size());
  };
  auto any_takes_q = [&](std::initializer_list<const WeightView*> ws,
                         const std::unique_ptr<BackendBuffer>& buf) {
    for (const WeightView* w : ws) {
      if (takes_q(*w, buf)) return true;
    }
    return false;
  };
  auto matmul = [&](const void* in, const WeightView& w, const float* bias, void* out,
                    DType out_type, const std::unique_ptr<BackendBuffer>* q = nullptr) {
    MatmulParams p{in, 0, w, bias, out, 0, T};
    p.x_type = a;
    p.out_type = out_type;
    if (q != nullptr && takes_q(w, *q)) p.xq = (*q)->data();
    return be.Matmul(p);
  };

  // Tensor parallelism: each rank holds a slice of the vocabulary, looks up the ids in it (zeros
  // for the others) and the all-reduce sums the slices; likewise for the row-parallel matmuls
  // (o and down), whose partial sums over the rank's heads / features meet in `delta`.
  RETURN_IF_ERROR(
      be.Embedding({weights.token_embd, s.ids, T, x, r.plan.vocab_begin, config_.n_vocab}));
  if (parallel) RETURN_IF_ERROR(collective_->AllReduceSum(rank, x, T * c.n_embd));
  const float* freq_factors = weights.rope_freqs.data;
  const int64_t num_slots = cache.shape().num_blocks * cache.shape().block_size;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = weights.layers[l];
    if (l == 0) {
      RETURN_IF_ERROR(
          be.RmsNorm({x, w.attn_norm.data, xn, T, c.n_embd, c.rms_eps, DType::kF32, a}));
    } else {  // the previous layer's FFN output joins the residual here
      AddRmsNormParams an{x, delta, w.attn_norm.data, xn, T, c.n_embd, c.rms_eps, DType::kF32, a};
      if (any_takes_q({&w.wqkv, &w.wqk, &w.wq, &w.wk, &w.wv}, r.xn_q)) {
        an.out_q = r.xn_q->data();
      }
      RETURN_IF_ERROR(be.AddRmsNorm(an));
    }
    // Layers after the first: xn_q holds this xn's form where the AddRmsNorm above wrote it (the
    // matmuls below take it under the same condition, takes_q).
    const std::unique_ptr<BackendBuffer>* xn_q = l > 0 ? &r.xn_q : nullptr;
    // q, k and v stay F32 through bias, q/k norm and RoPE: K and V are rounded once, into the
    // cache, and q not at all. Stacked weights: one matmul, rows [T, q | k | v]; q/k stacked (v in
    // another format): rows [T, q | k] then [T, v]; else three matmuls into [T, q], [T, k], [T, v].
    const bool fused_qkv = w.wqkv.data != nullptr;
    const bool fused_qk = !fused_qkv && w.wqk.data != nullptr;
    float* q = r.qkv->f32();
    const int64_t q_stride = fused_qkv ? qkv_dim : (fused_qk ? c.q_dim() + c.kv_dim() : c.q_dim());
    const int64_t k_stride = fused_qkv || fused_qk ? q_stride : c.kv_dim();
    const int64_t v_stride = fused_qkv ? qkv_dim : c.kv_dim();
    float* k = fused_qkv || fused_qk ? q + c.q_dim() : q + T * c.q_dim();
    float* v = fused_qkv ? k + c.kv_dim() : (fused_qk ? q + T * q_stride : k + T * c.kv_dim());
    if (fused_qkv) {
      RETURN_IF_ERROR(matmul(xn, w.wqkv, w.bqkv.data, q, DType::kF32, xn_q));
    } else if (fused_qk) {
      RETURN_IF_ERROR(matmul(xn, w.wqk, w.bqk.data, q, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wv, w.bv.data, v, DType::kF32, xn_q));
    } else {
      RETURN_IF_ERROR(matmul(xn, w.wq, w.bq.data, q, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wk, w.bk.data, k, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wv, w.bv.data, v, DType::kF32, xn_q));
    }
    if (c.qk_norm) {
      RETURN_IF_ERROR(be.RmsNorm({q, w.q_norm.data, q, T * c.n_head, c.head_dim, c.rms_eps}));
      RETURN_IF_ERROR(be.RmsNorm({k, w.k_norm.data, k, T * c.n_head_kv, c.head_dim, c.rms_eps}));
    }
    RopeKvWriteParams rkv;
    rkv.q = {q,
             s.pos,
             T,
             c.n_head,
             c.head_dim,
             q_stride,
             c.rope_dims,
             c.rope_theta,
             c.rope_freq_scale,
             freq_factors,
             c.rope_style};
    rkv.k = rkv.q;
    rkv.k.x = k;
    rkv.k.n_heads = c.n_head_kv;
    rkv.k.token_stride = k_stride;
    rkv.kv = {k,           v,          k_stride,  v_stride,         s.slots,          T,
              c.n_head_kv, c.head_dim, num_slots, cache.k(l, rank), cache.v(l, rank), a,
              DType::kF32};
    RETURN_IF_ERROR(be.RopeKvWrite(rkv));
    AttentionParams ap;
    ap.q = q;
    ap.q_stride = q_stride;
    ap.k_cache = cache.k(l, rank);
    ap.v_cache = cache.v(l, rank);
    ap.out = attn;
    ap.cu_seqlens_q = s.cu;
    ap.seq_lens_k = s.lens;
    ap.block_tables = s.tables;
    ap.block_table_stride = s.table_stride;
    ap.n_seqs = s.n_seqs;
    ap.n_tokens = T;
    ap.n_single = s.n_single;
    ap.n_heads = c.n_head;
    ap.n_kv_heads = c.n_head_kv;
    ap.head_dim = c.head_dim;
    ap.block_size = cache.shape().block_size;
    ap.num_blocks = cache.shape().num_blocks;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    ap.dtype = a;
    ap.q_type = DType::kF32;
    if (takes_q(w.wo, r.attn_q)) ap.out_q = r.attn_q->data();
    RETURN_IF_ERROR(be.Attention(ap));
    RETURN_IF_ERROR(matmul(attn, w.wo, nullptr, delta, DType::kF32, &r.attn_q));
    if (parallel) RETURN_IF_ERROR(collective_->AllReduceSum(rank, delta, T * c.n_embd));
    AddRmsNormParams fn{x, delta, w.ffn_norm.data, xn, T, c.n_embd, c.rms_eps, DType::kF32, a};
    if (any_takes_q({&w.w_gate_up, &w.w_gate, &w.w_up}, r.xn_q)) fn.out_q = r.xn_q->data();
    RETURN_IF_ERROR(be.AddRmsNorm(fn));
    // Stacked: one matmul, rows [T, gate | up]; else [T, gate] then [T, up].
    float* gate = r.ff->f32();
    const bool stacked = w.w_gate_up.data != nullptr;
    float* up = stacked ? gate + c.n_ff : gate + T * c.n_ff;
    const int64_t ff_stride = stacked ? 2 * c.n_ff : 0;
    SwigluParams sw{gate, up, act, T, c.n_ff, ff_stride, ff_stride, DType::kF32, a};
    if (takes_q(w.w_down, r.act_q)) sw.out_q = r.act_q->data();
    if (stacked) {
      RETURN_IF_ERROR(matmul(xn, w.w_gate_up, nullptr, gate, DType::kF32, &r.xn_q));
    } else {
      RETURN_IF_ERROR(matmul(xn, w.w_gate, nullptr, gate, DType::kF32, &r.xn_q));
      RETURN_IF_ERROR(matmul(xn, w.w_up, nullptr, up, DType::kF32, &r.xn_q));
    }
    RETURN_IF_ERROR(be.Swiglu(sw));
    RETURN_IF_ERROR(matmul(act, w.w_down, nullptr, delta, DType::kF32, &r.act_q));
    if (parallel) RETURN_IF_ERROR(collective_->AllReduceSum(rank, delta, T * c.n_embd));
  }
  if (s.n_out == 0) return Status::Ok();
  RETURN_IF_ERROR(be.AddRmsNorm(
      {x, delta, weights.output_norm.data, xn, T, c.n_embd, c.rms_eps, DType::kF32, a}));
  void* rows = r.out_rows->data();
  RETURN_IF_ERROR(be.GatherRows({xn, s.out_idx, s.n_out, c.n_embd, rows, a}));
  // Tensor parallelism: the rank's vocabulary rows into [n_out, vocab_pad], then gathered.
  float* out = parallel ? r.logits_part->f32() : r.logits->f32();
  MatmulParams head{rows,   0, weights.output, nullptr, out, parallel ? r.plan.vocab_pad : 0,
                    s.n_out};
  head.x_type = a;
  head.out_type = DType::kF32;
  RETURN_IF_ERROR(be.Matmul(head));
  return parallel ? GatherLogits(r, s.n_out) : Status::Ok();
}

Status Model::GatherLogits(Rank& r, int64_t n_out) {
  const int64_t pad = r.plan.vocab_pad;
  const size_t part_bytes = static_cast<size_t>(n_out * pad * 4);
  RETURN_IF_ERROR(collective_->AllGather(r.index, r.logits_part->data(), r.logits_all->data(),
                                         static_cast<int64_t>(part_bytes)));
  if (r.index != 0) return Status::Ok();
  // logits_all is [rank][n_out][pad]; rank 0's logits are [n_out][n_vocab], rank q's slice at
  // column q * pad.
  for (const auto& q : ranks_) {
    const int64_t cols = q->plan.n_vocab;
    RETURN_IF_ERROR(r.backend->Copy2D(
        r.logits->f32() + q->plan.vocab_begin, static_cast<size_t>(config_.n_vocab * 4),
        static_cast<char*>(r.logits_all->data()) + q->index * part_bytes,
        static_cast<size_t>(pad * 4), static_cast<size_t>(cols * 4), static_cast<size_t>(n_out)));
  }
  return Status::Ok();
}

Status Model::Forward(const ForwardBatch& b, KvCache& cache, std::vector<float>* logits) {
  const int64_t n_out = static_cast<int64_t>(b.logits_indices.size());
  last_n_out_ = 0;
  if (b.n_tokens() == 0) {
    if (logits != nullptr) logits->clear();
    return Status::Ok();
  }
  if (cache.shape().block_size != b.block_size) {
    return InvalidArgumentError("batch block size " + std::to_string(b.block_size) +
                                " differs from the cache's " +
                                std::to_string(cache.shape().block_size));
  }
  if (cache.shape().dtype != dtype_) {
    return InvalidArgumentError(std::string("KV cache dtype ") + DTypeName(cache.shape().dtype) +
                                " differs from the model's " + DTypeName(dtype_));
  }
  RETURN_IF_ERROR(b.Validate(cache.shape().num_blocks, config_.n_vocab));
  if (cache.ranks() != tensor_parallel()) {
    return InvalidArgumentError("KV cache of " + std::to_string(cache.ranks()) +
                                " ranks for a model of " + std::to_string(tensor_parallel()));
  }
  const bool graph = GraphEligible(b);
  // A graph step's padded metadata is the same for every rank: built once.
  const int64_t B = graph ? GraphBucket(b.n_seqs()) : 0;
  const int64_t W = graph ? PowerOfTwoAtLeast(std::max<int32_t>(b.max_blocks, 1)) : 0;
  const std::vector<int32_t> meta = graph ? GraphMeta(b, B, W) : std::vector<int32_t>();
  RETURN_IF_ERROR(OnRanks([&](Rank& r) {
    return graph ? ForwardGraph(r, meta, B, W, cache) : ForwardEager(r, b, cache);
  }));
  if (graph) {
    ++stats_.graph_replays;
  } else {
    ++stats_.eager_forwards;
  }
  last_n_out_ = n_out;
  Backend& be = backend();
  if (logits == nullptr) return Status::Ok();
  logits->resize(n_out * config_.n_vocab);
  if (n_out > 0) {
    RETURN_IF_ERROR(be.Download(logits->data(), ranks_[0]->logits->f32(),
                                n_out * config_.n_vocab * sizeof(float)));
  }
  return be.Synchronize();
}

Status Model::OnRanks(const std::function<Status(Rank&)>& fn) {
  if (!broken_.ok()) return broken_;
  if (tensor_parallel() == 1) return fn(*ranks_[0]);
  Status s =
      threads_->Run([&](int r) { return fn(*ranks_[r]); }, [&](int) { collective_->Abort(); });
  if (!s.ok()) {
    broken_ = FailedPreconditionError("a tensor-parallel step failed (" + s.ToString() +
                                      "); the model must be loaded again");
  }
  return s;
}

Status Model::Sample(std::span<const SampleRow> rows, std::span<const LogitEdit> edits,
                     std::vector<SampleOut>* out, std::span<const uint32_t> allowed,
                     int64_t allowed_words) {
  const int64_t n = static_cast<int64_t>(rows.size());
  out->assign(n, SampleOut{});
  Backend& be = backend();
  if (n == 0) return SynchronizeRanks();  // the step ends here: its errors are its own
  if (n > last_n_out_) {
    return FailedPreconditionError("sample: " + std::to_string(n) +
                                   " rows, the last forward left " + std::to_string(last_n_out_) +
                                   " logits rows");
  }
  if (!allowed.empty() &&
      (allowed_words * 32 < config_.n_vocab || allowed.size() % allowed_words != 0)) {
    return InvalidArgumentError("sample: allowed sets of " + std::to_string(allowed.size()) +
                                " words in rows of " + std::to_string(allowed_words) + " for " +
                                std::to_string(config_.n_vocab) + " tokens");
  }
  // One buffer: rows, then edits, then allowed sets, then outputs, each 256-byte aligned.
  auto align = [](size_t b) { return (b + 255) & ~size_t{255}; };
  const size_t rows_bytes = align(n * sizeof(SampleRow));
  const size_t edits_bytes = align(edits.size() * sizeof(LogitEdit));
  const size_t allowed_bytes = align(allowed.size() * sizeof(uint32_t));
  const size_t out_bytes = n * sizeof(SampleOut);
  const size_t in_bytes = rows_bytes + edits_bytes + allowed_bytes;
  const size_t total = in_bytes + out_bytes;
  if (!sample_ws_ || sample_ws_->size() < total) {
    const size_t grown = std::max(total, sample_ws_ ? 2 * sample_ws_->size() : total);
    sample_ws_.reset();
    ASSIGN_OR_RETURN(sample_ws_, be.Alloc(grown));
  }
  sample_host_.resize(in_bytes);
  std::memcpy(sample_host_.data(), rows.data(), n * sizeof(SampleRow));
  if (!edits.empty()) {
    std::memcpy(sample_host_.data() + rows_bytes, edits.data(), edits.size() * sizeof(LogitEdit));
  }
  if (!allowed.empty()) {
    std::memcpy(sample_host_.data() + rows_bytes + edits_bytes, allowed.data(),
                allowed.size() * sizeof(uint32_t));
  }
  char* base = static_cast<char*>(sample_ws_->data());
  RETURN_IF_ERROR(be.Upload(base, sample_host_.data(), sample_host_.size()));
  SampleParams p;
  p.logits = ranks_[0]->logits->f32();
  p.n_rows = n;
  p.n_vocab = config_.n_vocab;
  p.rows = reinterpret_cast<const SampleRow*>(base);
  p.edits = reinterpret_cast<const LogitEdit*>(base + rows_bytes);
  p.out = reinterpret_cast<SampleOut*>(base + in_bytes);
  if (!allowed.empty()) {
    p.allowed = reinterpret_cast<const uint32_t*>(base + rows_bytes + edits_bytes);
    p.allowed_words = allowed_words;
    p.allowed_rows = static_cast<int64_t>(allowed.size()) / allowed_words;
  }
  RETURN_IF_ERROR(be.Sample(p));
  RETURN_IF_ERROR(be.Download(out->data(), p.out, out_bytes));
  return SynchronizeRanks();
}

Status Model::SynchronizeRanks() {
  Status first = Status::Ok();
  for (const auto& r : ranks_) {
    Status s = r->backend->Synchronize();
    if (first.ok()) first = s;
  }
  return first;
}

Status Model::DownloadLogitsRow(int64_t row, float* out) {
  if (row < 0 || row >= last_n_out_) {
    return OutOfRangeError("logits row " + std::to_string(row) + " of " +
                           std::to_string(last_n_out_));
  }
  Backend& be = backend();
  RETURN_IF_ERROR(be.Download(out, ranks_[0]->logits->f32() + row * config_.n_vocab,
                              config_.n_vocab * sizeof(float)));
  return be.Synchronize();
}

Status Model::ForwardEager(Rank& r, const ForwardBatch& given, KvCache& cache) {
  // A batch mixing decode steps with prefill chunks runs its decode steps first, so that the
  // backend may take them as one decode batch (AttentionParams::n_single): on the CUDA backend the
  // prefill kernel would give each of them a 128-query tile per query head.
  const int64_t singles = given.n_tokens() > given.n_seqs() ? given.SingleQueries() : 0;
  ForwardBatch moved;
  if (singles > 0 && given.LeadingSingleQueries() < singles) moved = given.SingleQueriesFirst();
  const ForwardBatch& b = moved.n_seqs() > 0 ? moved : given;
  const int64_t T = b.n_tokens(), S = b.n_seqs(), W = b.max_blocks;
  const int64_t n_out = static_cast<int64_t>(b.logits_indices.size());
  RETURN_IF_ERROR(EnsureWorkspace(r, T, n_out));
  Backend& be = *r.backend;
  const int64_t meta_ints = MetaInts(T, S, W, n_out);
  if (meta_ints > r.ws_meta) {
    r.ws_meta = std::max(meta_ints, 2 * r.ws_meta);
    r.meta.reset();
    ASSIGN_OR_RETURN(r.meta, be.Alloc(r.ws_meta * 4));
  }
  int32_t* m = r.meta->i32();
  StepMeta s{m,
             m + T,
             m + 2 * T,
             m + 3 * T,
             m + 3 * T + S + 1,
             m + 3 * T + 2 * S + 1,
             m + 3 * T + 2 * S + 1 + S * W,
             T,
             S,
             n_out,
             W,
             singles};
  RETURN_IF_ERROR(be.Upload(m, b.token_ids.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + T, b.positions.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + 2 * T, b.slot_mapping.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + 3 * T, b.cu_seqlens_q.data(), (S + 1) * 4));
  RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.lens), b.seq_lens_k.data(), S * 4));
  RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.tables), b.block_tables.data(), S * W * 4));
  if (n_out > 0) {
    RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.out_idx), b.logits_indices.data(), n_out * 4));
  }
  return RunLayers(r, s, cache);
}

bool Model::GraphEligible(const ForwardBatch& b) const {
  if (!graphs_enabled_ || !ranks_[0]->backend->SupportsGraphs()) return false;
  const int64_t n = b.n_seqs();
  if (n == 0 || b.n_tokens() != n || GraphBucket(n) == 0) return false;
  if (static_cast<int64_t>(b.logits_indices.size()) != n) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (b.logits_indices[i] != i) return false;  // one token per sequence, logits in order
  }
  return true;
}

// The metadata of a decode step padded to its graph's shape (B sequences, tables W wide), laid out
// as MetaInts: padding sequences have no keys (their attention output is zero), write no K/V
// (slot -1) and their logits rows are computed but not downloaded.
std::vector<int32_t> Model::GraphMeta(const ForwardBatch& b, int64_t B, int64_t W) {
  const int64_t n = b.n_seqs();
  std::vector<int32_t> h(MetaInts(B, B, W, B), 0);
  int32_t* ids = h.data();
  int32_t* pos = ids + B;
  int32_t* slots = pos + B;
  int32_t* cu = slots + B;
  int32_t* lens = cu + B + 1;
  int32_t* tables = lens + B;
  int32_t* out_idx = tables + B * W;
  std::fill(slots, slots + B, -1);
  std::fill(tables, tables + B * W, -1);
  std::iota(cu, cu + B + 1, 0);
  std::iota(out_idx, out_idx + B, 0);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = b.token_ids[i];
    pos[i] = b.positions[i];
    slots[i] = b.slot_mapping[i];
    lens[i] = b.seq_lens_k[i];
    std::copy_n(b.block_tables.begin() + i * b.max_blocks, b.max_blocks, tables + i * W);
  }
  return h;
}

Status Model::ForwardGraph(Rank& r, const std::vector<int32_t>& h, int64_t B, int64_t W,
                           KvCache& cache) {
  RETURN_IF_ERROR(EnsureWorkspace(r, B, B));
  Backend& be = *r.backend;
  std::vector<void*> pools;
  for (int64_t l = 0; l < cache.shape().n_layer; ++l) {
    pools.push_back(cache.k(l, r.index));
    pools.push_back(cache.v(l, r.index));
  }
  Graph& g = r.graphs[{B, W}];
  if (g.graph && g.cache_pools != pools) g.graph.reset();  // recorded against another cache
  if (!g.meta) {
    ASSIGN_OR_RETURN(g.meta, be.Alloc(MetaInts(B, B, W, B) * 4));
  }
  RETURN_IF_ERROR(be.Upload(g.meta->data(), h.data(), h.size() * 4));
  if (!g.graph) {
    int32_t* m = g.meta->i32();
    StepMeta s{m, m + B, m + 2 * B, m + 3 * B, m + 4 * B + 1, m + 5 * B + 1, m + 5 * B + 1 + B * W,
               B, B,     B,         W};
    RETURN_IF_ERROR(be.BeginCapture());
    Status st = RunLayers(r, s, cache);
    auto graph = be.EndCapture();
    RETURN_IF_ERROR(st);
    if (!graph.ok()) return graph.status();
    g.graph = std::move(graph).value();
    g.cache_pools = std::move(pools);
    if (r.index == 0) ++stats_.graph_captures;  // once per model, not per rank
  }
  return g.graph->Replay();
}

}  // namespace forge
