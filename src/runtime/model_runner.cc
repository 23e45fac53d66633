// ModelRunner::Load (one backend or one per tensor-parallel rank), the activation dtype, the KV
// cache and the workspace.
#include "runtime/model_runner.h"

#include <algorithm>

#include "model/moe.h"

namespace forge {

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Load(const std::string& path, Backend* backend,
                                                         const LoadProgress& progress,
                                                         const RunnerOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromFileParallel(std::move(file), {backend}, nullptr, progress, options);
}

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::FromFile(std::unique_ptr<GgufFile> file,
                                                             Backend* backend,
                                                             const LoadProgress& progress,
                                                             const RunnerOptions& options) {
  return FromFileParallel(std::move(file), {backend}, nullptr, progress, options);
}

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::LoadParallel(const std::string& path,
                                                                 std::vector<Backend*> ranks,
                                                                 Collective* collective,
                                                                 const LoadProgress& progress,
                                                                 const RunnerOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromFileParallel(std::move(file), std::move(ranks), collective, progress, options);
}

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::FromFileParallel(std::unique_ptr<GgufFile> file,
                                                                     std::vector<Backend*> ranks,
                                                                     Collective* collective,
                                                                     const LoadProgress& progress,
                                                                     const RunnerOptions& options) {
  const int n = static_cast<int>(ranks.size());
  if (n < 1) return InvalidArgumentError("model: no backend");
  if (n > 1 && (collective == nullptr || collective->size() != n)) {
    return InvalidArgumentError("model: tensor parallelism over " + std::to_string(n) +
                                " backends needs a collective of as many ranks");
  }
  auto m = std::unique_ptr<ModelRunner>(new ModelRunner());
  const std::string path = file->path();
  ASSIGN_OR_RETURN(m->model_, Model::FromFile(std::move(file)));
  const ModelConfig& config = m->model_.config;
  const ModelWeights& weights = m->model_.weights;
  if (n > 1 && config.pooling != PoolingType::kNone) {
    return UnimplementedError(path + ": a model that embeds (pooling " +
                              PoolingName(config.pooling) + ") runs on one device, not " +
                              std::to_string(n));
  }
  Backend& first = *ranks[0];
  m->dtype_ =
      options.dtype ? *options.dtype : first.DefaultActivationType(weights.layers[0].wq.type);
  if (!first.SupportsActivationType(m->dtype_)) {
    return UnimplementedError("the " + first.name() + " backend does not run " +
                              DTypeName(m->dtype_) + " activations");
  }
  // Progress over every rank's share: each rank's bytes follow the earlier ranks'.
  int64_t offset = 0;
  for (int r = 0; r < n; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->index = r;
    rank->backend = ranks[r];
    auto plan = PlanShard(config, weights, r, n);
    if (!plan.ok()) return plan.status().WithContext(path);
    rank->plan = *plan;
    ASSIGN_OR_RETURN(rank->shard, ShardWeights(config, weights, rank->plan));
    LoadProgress rank_progress;
    if (progress) {
      rank_progress = [&, r, n](int64_t done, int64_t rank_total) {
        progress(offset + done, offset + rank_total * (n - r));
      };
    }
    auto prepared = PrepareModelWeights(rank->shard.weights, *ranks[r], m->dtype_, rank_progress);
    if (!prepared.ok()) {
      Status s = prepared.status();
      if (n > 1) s = s.WithContext("tensor-parallel rank " + std::to_string(r));
      return s.WithContext(path);
    }
    rank->weights = std::move(prepared).value();
    offset += WeightMatrixBytes(rank->shard.weights, true);
    m->ranks_.push_back(std::move(rank));
  }
  m->collective_ = collective;
  m->threads_ = std::make_unique<RankThreads>(n);
  m->graphs_enabled_ = options.graphs;
  return m;
}

ModelRunner::~ModelRunner() {
  // Graphs and buffers go before the threads and the backends they were made on.
  ranks_.clear();
}

KvCacheShape ModelRunner::CacheShape(int64_t num_blocks, int64_t block_size) const {
  KvCacheShape s;
  s.n_layer = model_.config.n_layer;
  s.n_kv_heads = ranks_[0]->shard.config.n_head_kv;
  s.head_dim = model_.config.head_dim;
  s.block_size = block_size;
  s.num_blocks = num_blocks;
  s.dtype = dtype_;
  return s;
}

StatusOr<std::unique_ptr<KvCache>> ModelRunner::CreateKvCache(int64_t num_blocks,
                                                              int64_t block_size) {
  std::vector<Backend*> backends;
  for (const auto& r : ranks_) backends.push_back(r->backend);
  return KvCache::Create(backends, CacheShape(num_blocks, block_size));
}

Status ModelRunner::ReserveWorkspace(int64_t n_tokens, int64_t n_out) {
  for (const auto& r : ranks_) RETURN_IF_ERROR(EnsureWorkspace(*r, n_tokens, n_out));
  return Status::Ok();
}

Status ModelRunner::EnsureWorkspace(Rank& r, int64_t n_tokens, int64_t n_out) {
  const ModelConfig& c = r.shard.config;
  const int64_t a = static_cast<int64_t>(DTypeSize(dtype_));
  auto alloc = [&](std::unique_ptr<BackendBuffer>& buf, int64_t bytes) -> Status {
    buf.reset();  // free first: the old and new buffers need not fit together
    ASSIGN_OR_RETURN(buf, r.backend->Alloc(static_cast<size_t>(std::max<int64_t>(bytes, 4))));
    return Status::Ok();
  };
  if (n_tokens > r.ws_tokens || n_out > r.ws_out) r.graphs.clear();  // they hold old pointers
  if (r.ws_tokens == 0) {  // first use: the one-token forms, sized for every layer's matmuls
    auto form_bytes = [&](const WeightView& v) -> int64_t {
      return v.data != nullptr ? r.backend->QuantizedActivationBytes(v, 1, dtype_, DType::kF32) : 0;
    };
    int64_t xn_q = 0, attn_q = 0, act_q = 0;
    for (const LayerWeights& w : r.weights.layers) {
      for (const WeightView* v :
           {&w.wqkv, &w.wqk, &w.wq, &w.wk, &w.wv, &w.w_gate_up, &w.w_gate, &w.w_up}) {
        xn_q = std::max(xn_q, form_bytes(*v));
      }
      attn_q = std::max(attn_q, form_bytes(w.wo));
      act_q = std::max(act_q, form_bytes(w.w_down));
    }
    if (xn_q > 0) RETURN_IF_ERROR(alloc(r.xn_q, xn_q));
    if (attn_q > 0) RETURN_IF_ERROR(alloc(r.attn_q, attn_q));
    if (act_q > 0) RETURN_IF_ERROR(alloc(r.act_q, act_q));
  }
  // Sized for one shape of layer: CheckUniformLayers refuses models whose layers differ in it.
  if (n_tokens > r.ws_tokens) {
    r.ws_tokens = std::max(n_tokens, 2 * r.ws_tokens);
    const int64_t t = r.ws_tokens;
    RETURN_IF_ERROR(alloc(r.x, t * c.n_embd * 4));  // the residual stream stays F32
    RETURN_IF_ERROR(alloc(r.xn, t * c.n_embd * a));
    RETURN_IF_ERROR(alloc(r.qkv, t * (c.q_dim() + 2 * c.kv_dim()) * 4));
    RETURN_IF_ERROR(alloc(r.attn, t * c.q_dim() * a));
    // Products that feed an elementwise op or the residual stay F32 (q/k/v, gate/up, o/down).
    const int64_t ff = std::max(c.n_ff, c.n_ff_shexp);  // the dense FFN's, or the shared expert's
    RETURN_IF_ERROR(alloc(r.ff, t * 2 * ff * 4));
    RETURN_IF_ERROR(alloc(r.act, t * ff * a));
    if (c.n_expert > 0) RETURN_IF_ERROR(alloc(r.moe, MoeWorkspaceBytes(c, t, dtype_)));
    RETURN_IF_ERROR(alloc(r.delta, t * c.n_embd * 4));
  }
  if (n_out > r.ws_out) {
    r.ws_out = std::max(n_out, 2 * r.ws_out);
    RETURN_IF_ERROR(alloc(r.out_rows, r.ws_out * c.n_embd * a));
    const int n = tensor_parallel();
    if (n > 1) {
      RETURN_IF_ERROR(alloc(r.logits_part, r.ws_out * r.plan.vocab_pad * 4));
      RETURN_IF_ERROR(alloc(r.logits_all, n * r.ws_out * r.plan.vocab_pad * 4));
    }
    // The whole vocabulary's logits live on rank 0 (sampling runs there).
    if (r.index == 0) {
      RETURN_IF_ERROR(alloc(r.logits, r.ws_out * model_.config.OutputWidth() * 4));
    }
  }
  return Status::Ok();
}

}  // namespace forge
