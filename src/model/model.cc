// Model::Load and the llama-family forward pass, written once over Backend ops.
#include "model/model.h"

#include <cmath>

namespace forge {

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path, Backend* backend,
                                             const LoadProgress& progress) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromFile(std::move(file), backend, progress);
}

StatusOr<std::unique_ptr<Model>> Model::FromFile(std::unique_ptr<GgufFile> file,
                                                 Backend* backend, const LoadProgress& progress) {
  auto m = std::unique_ptr<Model>(new Model());
  const std::string path = file->path();
  auto config = LoadModelConfig(*file);
  if (!config.ok()) return config.status().WithContext(path);
  m->config_ = std::move(config).value();
  auto weights = BindModelWeights(*file, m->config_);
  if (!weights.ok()) return weights.status().WithContext(path);
  auto prepared = PrepareModelWeights(*weights, *backend, progress);
  if (!prepared.ok()) return prepared.status().WithContext(path);
  m->host_weights_ = std::move(weights).value();
  m->weights_ = std::move(prepared).value();
  m->file_ = std::move(file);
  m->backend_ = backend;
  return m;
}

KvCacheShape Model::CacheShape(int64_t num_blocks, int64_t block_size) const {
  KvCacheShape s;
  s.n_layer = config_.n_layer;
  s.n_kv_heads = config_.n_head_kv;
  s.head_dim = config_.head_dim;
  s.block_size = block_size;
  s.num_blocks = num_blocks;
  s.dtype_bytes = 4;
  return s;
}

Status Model::EnsureWorkspace(int64_t n_tokens, int64_t n_out, const ForwardBatch& b) {
  const ModelConfig& c = config_;
  const int64_t meta = 3 * n_tokens + 2 * b.n_seqs() + 1 + static_cast<int64_t>(b.block_tables.size()) + n_out;
  auto alloc = [&](std::unique_ptr<BackendBuffer>& buf, int64_t floats) -> Status {
    ASSIGN_OR_RETURN(buf, backend_->Alloc(static_cast<size_t>(std::max<int64_t>(floats, 1)) * 4));
    return Status::Ok();
  };
  if (n_tokens > ws_tokens_) {
    ws_tokens_ = std::max(n_tokens, 2 * ws_tokens_);
    const int64_t t = ws_tokens_;
    RETURN_IF_ERROR(alloc(x_, t * c.n_embd));
    RETURN_IF_ERROR(alloc(xn_, t * c.n_embd));
    RETURN_IF_ERROR(alloc(qkv_, t * (c.q_dim() + 2 * c.kv_dim())));
    RETURN_IF_ERROR(alloc(attn_, t * c.q_dim()));
    RETURN_IF_ERROR(alloc(ff_, t * 2 * c.n_ff));
  }
  if (n_out > ws_out_) {
    ws_out_ = std::max(n_out, 2 * ws_out_);
    RETURN_IF_ERROR(alloc(out_rows_, ws_out_ * c.n_embd));
    RETURN_IF_ERROR(alloc(logits_, ws_out_ * c.n_vocab));
  }
  if (meta > ws_meta_) {
    ws_meta_ = std::max(meta, 2 * ws_meta_);
    RETURN_IF_ERROR(alloc(meta_, ws_meta_));
  }
  return Status::Ok();
}

Status Model::Forward(const ForwardBatch& b, KvCache& cache, std::vector<float>* logits) {
  const ModelConfig& c = config_;
  const int64_t T = b.n_tokens();
  const int64_t n_out = static_cast<int64_t>(b.logits_indices.size());
  if (T == 0) {
    logits->clear();
    return Status::Ok();
  }
  if (cache.shape().block_size != b.block_size) {
    return InvalidArgumentError("batch block size " + std::to_string(b.block_size) +
                                " differs from the cache's " +
                                std::to_string(cache.shape().block_size));
  }
  RETURN_IF_ERROR(b.Validate(cache.shape().num_blocks, c.n_vocab));
  RETURN_IF_ERROR(EnsureWorkspace(T, n_out, b));
  Backend& be = *backend_;

  // Batch metadata into backend memory.
  int32_t* meta = meta_->i32();
  int32_t* ids = meta;
  int32_t* pos = ids + T;
  int32_t* slots = pos + T;
  int32_t* cu = slots + T;
  int32_t* lens_k = cu + b.n_seqs() + 1;
  int32_t* tables = lens_k + b.n_seqs();
  int32_t* out_idx = tables + b.block_tables.size();
  RETURN_IF_ERROR(be.Upload(ids, b.token_ids.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(pos, b.positions.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(slots, b.slot_mapping.data(), T * 4));
  RETURN_IF_ERROR(be.Upload(cu, b.cu_seqlens_q.data(), (b.n_seqs() + 1) * 4));
  RETURN_IF_ERROR(be.Upload(lens_k, b.seq_lens_k.data(), b.n_seqs() * 4));
  RETURN_IF_ERROR(be.Upload(tables, b.block_tables.data(), b.block_tables.size() * 4));
  if (n_out > 0) RETURN_IF_ERROR(be.Upload(out_idx, b.logits_indices.data(), n_out * 4));

  float* x = x_->f32();
  float* xn = xn_->f32();
  float* q = qkv_->f32();
  float* k = q + T * c.q_dim();
  float* v = k + T * c.kv_dim();
  float* attn = attn_->f32();
  float* gate = ff_->f32();
  float* up = gate + T * c.n_ff;

  RETURN_IF_ERROR(be.Embedding({weights_.token_embd, ids, T, x}));
  const float* freq_factors = weights_.rope_freqs.data;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = weights_.layers[l];
    RETURN_IF_ERROR(be.RmsNorm({x, w.attn_norm.data, xn, T, c.n_embd, c.rms_eps}));
    RETURN_IF_ERROR(be.Matmul({xn, 0, w.wq, w.bq.data, q, 0, T}));
    RETURN_IF_ERROR(be.Matmul({xn, 0, w.wk, w.bk.data, k, 0, T}));
    RETURN_IF_ERROR(be.Matmul({xn, 0, w.wv, w.bv.data, v, 0, T}));
    if (c.qk_norm) {
      RETURN_IF_ERROR(be.RmsNorm({q, w.q_norm.data, q, T * c.n_head, c.head_dim, c.rms_eps}));
      RETURN_IF_ERROR(be.RmsNorm({k, w.k_norm.data, k, T * c.n_head_kv, c.head_dim, c.rms_eps}));
    }
    RopeParams rope{q, pos, T, c.n_head, c.head_dim, 0, c.rope_dims,
                    c.rope_theta, c.rope_freq_scale, freq_factors, c.rope_style};
    RETURN_IF_ERROR(be.Rope(rope));
    rope.x = k;
    rope.n_heads = c.n_head_kv;
    RETURN_IF_ERROR(be.Rope(rope));
    const int64_t num_slots = cache.shape().num_blocks * cache.shape().block_size;
    RETURN_IF_ERROR(be.KvWrite({k, v, 0, 0, slots, T, c.n_head_kv, c.head_dim, num_slots,
                                cache.k(l), cache.v(l)}));
    AttentionParams ap;
    ap.q = q;
    ap.k_cache = cache.k(l);
    ap.v_cache = cache.v(l);
    ap.out = attn;
    ap.cu_seqlens_q = cu;
    ap.seq_lens_k = lens_k;
    ap.block_tables = tables;
    ap.block_table_stride = b.max_blocks;
    ap.n_seqs = b.n_seqs();
    ap.n_tokens = T;
    ap.n_heads = c.n_head;
    ap.n_kv_heads = c.n_head_kv;
    ap.head_dim = c.head_dim;
    ap.block_size = b.block_size;
    ap.num_blocks = cache.shape().num_blocks;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    RETURN_IF_ERROR(be.Attention(ap));
    RETURN_IF_ERROR(be.Matmul({attn, 0, w.wo, nullptr, xn, 0, T}));
    RETURN_IF_ERROR(be.Add({x, xn, x, T * c.n_embd}));
    RETURN_IF_ERROR(be.RmsNorm({x, w.ffn_norm.data, xn, T, c.n_embd, c.rms_eps}));
    RETURN_IF_ERROR(be.Matmul({xn, 0, w.w_gate, nullptr, gate, 0, T}));
    RETURN_IF_ERROR(be.Matmul({xn, 0, w.w_up, nullptr, up, 0, T}));
    RETURN_IF_ERROR(be.Swiglu({gate, up, gate, T, c.n_ff, 0, 0}));
    RETURN_IF_ERROR(be.Matmul({gate, 0, w.w_down, nullptr, xn, 0, T}));
    RETURN_IF_ERROR(be.Add({x, xn, x, T * c.n_embd}));
  }
  logits->resize(n_out * c.n_vocab);
  if (n_out == 0) return Status::Ok();
  float* rows = out_rows_->f32();
  RETURN_IF_ERROR(be.GatherRows({x, out_idx, n_out, c.n_embd, rows}));
  RETURN_IF_ERROR(be.RmsNorm({rows, weights_.output_norm.data, rows, n_out, c.n_embd, c.rms_eps}));
  RETURN_IF_ERROR(be.Matmul({rows, 0, weights_.output, nullptr, logits_->f32(), 0, n_out}));
  RETURN_IF_ERROR(be.Download(logits->data(), logits_->f32(), n_out * c.n_vocab * 4));
  return be.Synchronize();
}

}  // namespace forge
