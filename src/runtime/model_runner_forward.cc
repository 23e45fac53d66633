// ModelRunner::Forward: the step's metadata uploaded, then the architecture's forward on every
// rank, run op by op (eager) or, for decode steps on a backend with graphs, recorded once per
// (batch bucket, table width) and replayed with the step's metadata uploaded into the graph's own
// buffer.
#include <algorithm>
#include <numeric>

#include "model/moe.h"
#include "runtime/model_runner.h"

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

// The metadata laid out as MetaInts at m.
StepMeta MetaAt(const int32_t* m, int64_t T, int64_t S, int64_t W, int64_t n_out,
                int64_t n_single) {
  return {.ids = m,
          .pos = m + T,
          .slots = m + 2 * T,
          .cu_seqlens = m + 3 * T,
          .lens = m + 3 * T + S + 1,
          .tables = m + 3 * T + 2 * S + 1,
          .out_idx = m + 3 * T + 2 * S + 1 + S * W,
          .n_tokens = T,
          .n_seqs = S,
          .n_out = n_out,
          .table_stride = W,
          .n_single = n_single};
}

// A workspace buffer's memory; null where it is not allocated (yet).
void* Data(const std::unique_ptr<BackendBuffer>& b) { return b ? b->data() : nullptr; }
float* F32(const std::unique_ptr<BackendBuffer>& b) { return static_cast<float*>(Data(b)); }

ActivationForm Form(const std::unique_ptr<BackendBuffer>& b) {
  if (!b) return {};
  return {.data = b->data(), .bytes = static_cast<int64_t>(b->size())};
}

}  // namespace

Status ModelRunner::RunStep(Rank& r, const StepMeta& meta, KvCache& cache) {
  const int64_t n_layer = cache.shape().n_layer;
  r.k_pools.resize(n_layer);
  r.v_pools.resize(n_layer);
  for (int64_t l = 0; l < n_layer; ++l) {
    r.k_pools[l] = cache.k(l, r.index);
    r.v_pools[l] = cache.v(l, r.index);
  }
  const StepContext step{
      .backend = *r.backend,
      .config = r.shard.config,
      .weights = r.weights,
      .dtype = dtype_,
      .meta = meta,
      .kv = {.k = r.k_pools.data(),
             .v = r.v_pools.data(),
             .block_size = cache.shape().block_size,
             .num_blocks = cache.shape().num_blocks},
      .ws = {.x = F32(r.x),
             .xn = Data(r.xn),
             .qkv = F32(r.qkv),
             .attn = Data(r.attn),
             .ff = F32(r.ff),
             .act = Data(r.act),
             .delta = F32(r.delta),
             .out_rows = Data(r.out_rows),
             .logits = F32(r.logits),
             .logits_part = F32(r.logits_part),
             .xn_q = Form(r.xn_q),
             .attn_q = Form(r.attn_q),
             .act_q = Form(r.act_q),
             .moe = MoeWorkspaceAt(Data(r.moe), r.shard.config, r.ws_tokens, dtype_)},
      .collective = collective_,
      .rank = r.index,
      .n_ranks = tensor_parallel(),
      .n_vocab = model_.config.n_vocab,
      .vocab_begin = r.plan.vocab_begin,
      .vocab_pad = r.plan.vocab_pad};
  RETURN_IF_ERROR(model_.architecture->forward(step));
  // Tensor parallelism: every rank's vocabulary slice of the logits, gathered on rank 0.
  return tensor_parallel() > 1 && meta.n_out > 0 ? GatherLogits(r, meta.n_out) : Status::Ok();
}

Status ModelRunner::GatherLogits(Rank& r, int64_t n_out) {
  const int64_t pad = r.plan.vocab_pad;
  const size_t part_bytes = static_cast<size_t>(n_out * pad * 4);
  RETURN_IF_ERROR(collective_->AllGather(r.index, r.logits_part->data(), r.logits_all->data(),
                                         static_cast<int64_t>(part_bytes)));
  if (r.index != 0) return Status::Ok();
  // logits_all is [rank][n_out][pad]; rank 0's logits are [n_out][n_vocab], rank q's slice at
  // column q * pad.
  const int64_t n_vocab = model_.config.n_vocab;
  for (const auto& q : ranks_) {
    const int64_t cols = q->plan.n_vocab;
    RETURN_IF_ERROR(r.backend->Copy2D(
        r.logits->f32() + q->plan.vocab_begin, static_cast<size_t>(n_vocab * 4),
        static_cast<char*>(r.logits_all->data()) + q->index * part_bytes,
        static_cast<size_t>(pad * 4), static_cast<size_t>(cols * 4), static_cast<size_t>(n_out)));
  }
  return Status::Ok();
}

Status ModelRunner::Forward(const ForwardBatch& b, KvCache& cache, std::vector<float>* logits) {
  const int64_t n_vocab = model_.config.n_vocab;
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
  RETURN_IF_ERROR(b.Validate(cache.shape().num_blocks, n_vocab));
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
  const int64_t width = model_.config.OutputWidth();  // a pooled vector's, or the logits'
  logits->resize(n_out * width);
  if (n_out > 0) {
    RETURN_IF_ERROR(
        be.Download(logits->data(), ranks_[0]->logits->f32(), n_out * width * sizeof(float)));
  }
  return be.Synchronize();
}

Status ModelRunner::OnRanks(const std::function<Status(Rank&)>& fn) {
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

Status ModelRunner::SynchronizeRanks() {
  Status first = Status::Ok();
  for (const auto& r : ranks_) {
    Status s = r->backend->Synchronize();
    if (first.ok()) first = s;
  }
  return first;
}

Status ModelRunner::ForwardEager(Rank& r, const ForwardBatch& given, KvCache& cache) {
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
  const StepMeta s = MetaAt(m, T, S, W, n_out, singles);
  RETURN_IF_ERROR(be.Upload(m, b.token_ids.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + T, b.positions.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + 2 * T, b.slot_mapping.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(m + 3 * T, b.cu_seqlens_q.data(), (S + 1) * 4));
  RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.lens), b.seq_lens_k.data(), S * 4));
  RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.tables), b.block_tables.data(), S * W * 4));
  if (n_out > 0) {
    RETURN_IF_ERROR(be.Upload(const_cast<int32_t*>(s.out_idx), b.logits_indices.data(), n_out * 4));
  }
  return RunStep(r, s, cache);
}

bool ModelRunner::GraphEligible(const ForwardBatch& b) const {
  if (!graphs_enabled_ || !ranks_[0]->backend->SupportsGraphs()) return false;
  // The mixture-of-experts block reads the step's routing back to the host (model/moe.h).
  if (model_.config.n_expert > 0) return false;
  // A model that pools runs whole prompts, one step each: nothing to replay.
  if (model_.config.pooling != PoolingType::kNone) return false;
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
std::vector<int32_t> ModelRunner::GraphMeta(const ForwardBatch& b, int64_t B, int64_t W) {
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

Status ModelRunner::ForwardGraph(Rank& r, const std::vector<int32_t>& h, int64_t B, int64_t W,
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
    RETURN_IF_ERROR(be.BeginCapture());
    Status st = RunStep(r, MetaAt(g.meta->i32(), B, B, W, B, 0), cache);
    auto graph = be.EndCapture();
    RETURN_IF_ERROR(st);
    if (!graph.ok()) return graph.status();
    g.graph = std::move(graph).value();
    g.cache_pools = std::move(pools);
    if (r.index == 0) ++stats_.graph_captures;  // once per runner, not per rank
  }
  return g.graph->Replay();
}

}  // namespace forge
