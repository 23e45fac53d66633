// Model::Load, the activation dtype and the workspace.
#include "model/model.h"

#include <algorithm>

namespace forge {

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path, Backend* backend,
                                             const LoadProgress& progress,
                                             const ModelOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromFile(std::move(file), backend, progress, options);
}

StatusOr<std::unique_ptr<Model>> Model::FromFile(std::unique_ptr<GgufFile> file, Backend* backend,
                                                 const LoadProgress& progress,
                                                 const ModelOptions& options) {
  auto m = std::unique_ptr<Model>(new Model());
  const std::string path = file->path();
  auto config = LoadModelConfig(*file);
  if (!config.ok()) return config.status().WithContext(path);
  m->config_ = std::move(config).value();
  auto weights = BindModelWeights(*file, m->config_);
  if (!weights.ok()) return weights.status().WithContext(path);
  m->dtype_ =
      options.dtype ? *options.dtype : backend->DefaultActivationType(weights->layers[0].wq.type);
  if (!backend->SupportsActivationType(m->dtype_)) {
    return UnimplementedError("the " + backend->name() + " backend does not run " +
                              DTypeName(m->dtype_) + " activations");
  }
  auto prepared = PrepareModelWeights(*weights, *backend, m->dtype_, progress);
  if (!prepared.ok()) return prepared.status().WithContext(path);
  m->host_weights_ = std::move(weights).value();
  m->weights_ = std::move(prepared).value();
  m->file_ = std::move(file);
  m->backend_ = backend;
  m->graphs_enabled_ = options.graphs;
  return m;
}

KvCacheShape Model::CacheShape(int64_t num_blocks, int64_t block_size) const {
  KvCacheShape s;
  s.n_layer = config_.n_layer;
  s.n_kv_heads = config_.n_head_kv;
  s.head_dim = config_.head_dim;
  s.block_size = block_size;
  s.num_blocks = num_blocks;
  s.dtype = dtype_;
  return s;
}

Status Model::ReserveWorkspace(int64_t n_tokens, int64_t n_out) {
  return EnsureWorkspace(n_tokens, n_out);
}

Status Model::EnsureWorkspace(int64_t n_tokens, int64_t n_out) {
  const ModelConfig& c = config_;
  const int64_t a = static_cast<int64_t>(DTypeSize(dtype_));
  auto alloc = [&](std::unique_ptr<BackendBuffer>& buf, int64_t bytes) -> Status {
    buf.reset();  // free first: the old and new buffers need not fit together
    ASSIGN_OR_RETURN(buf, backend_->Alloc(static_cast<size_t>(std::max<int64_t>(bytes, 4))));
    return Status::Ok();
  };
  if (n_tokens > ws_tokens_ || n_out > ws_out_) graphs_.clear();  // they hold the old pointers
  if (n_tokens > ws_tokens_) {
    ws_tokens_ = std::max(n_tokens, 2 * ws_tokens_);
    const int64_t t = ws_tokens_;
    RETURN_IF_ERROR(alloc(x_, t * c.n_embd * 4));  // the residual stream stays F32
    RETURN_IF_ERROR(alloc(xn_, t * c.n_embd * a));
    RETURN_IF_ERROR(alloc(qkv_, t * (c.q_dim() + 2 * c.kv_dim()) * 4));
    RETURN_IF_ERROR(alloc(attn_, t * c.q_dim() * a));
    // Products that feed an elementwise op or the residual stay F32 (q/k/v, gate/up, o/down).
    RETURN_IF_ERROR(alloc(ff_, t * 2 * c.n_ff * 4));
    RETURN_IF_ERROR(alloc(act_, t * c.n_ff * a));
    RETURN_IF_ERROR(alloc(delta_, t * c.n_embd * 4));
  }
  if (n_out > ws_out_) {
    ws_out_ = std::max(n_out, 2 * ws_out_);
    RETURN_IF_ERROR(alloc(out_rows_, ws_out_ * c.n_embd * a));
    RETURN_IF_ERROR(alloc(logits_, ws_out_ * c.n_vocab * 4));
  }
  return Status::Ok();
}

}  // namespace forge
