// Model: a loaded llama-family GGUF (config + weights bound over the mapping) and its forward
// pass over a ForwardBatch on a Backend, writing K/V into a paged KvCache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"

namespace forge {

class Model {
 public:
  // Opens the file, reads the config and binds the weights. The backend must outlive the model.
  // progress(done_bytes, total_bytes) follows the weights onto the backend.
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path, Backend* backend,
                                               const LoadProgress& progress = {});
  static StatusOr<std::unique_ptr<Model>> FromFile(std::unique_ptr<GgufFile> file,
                                                   Backend* backend,
                                                   const LoadProgress& progress = {});

  const ModelConfig& config() const { return config_; }
  const GgufFile& file() const { return *file_; }
  // Weights as the backend uses them, and as views of the mapped file.
  const ModelWeights& weights() const { return weights_; }
  const ModelWeights& host_weights() const { return host_weights_; }
  Backend& backend() { return *backend_; }
  KvCacheShape CacheShape(int64_t num_blocks, int64_t block_size = 16) const;

  // Runs the batch; K/V of its tokens are written into `cache`. logits receives
  // [batch.logits_indices.size(), n_vocab] floats (host memory).
  Status Forward(const ForwardBatch& batch, KvCache& cache, std::vector<float>* logits);

 private:
  Status EnsureWorkspace(int64_t n_tokens, int64_t n_out, const ForwardBatch& batch);

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  ModelWeights host_weights_;
  Backend* backend_ = nullptr;
  // Workspace (backend memory), grown on demand.
  int64_t ws_tokens_ = 0, ws_out_ = 0, ws_meta_ = 0;
  std::unique_ptr<BackendBuffer> x_, xn_, qkv_, attn_, ff_, out_rows_, logits_, meta_;
};

}  // namespace forge
