// Model: a loaded llama-family GGUF (config + weights bound over the mapping) and its forward
// pass over a ForwardBatch on a Backend, writing K/V into a paged KvCache. Decode steps on a
// backend with graphs are recorded once per (batch bucket, block-table width) and replayed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"

namespace forge {

struct ModelOptions {
  // Activations and KV cache; empty: the backend's default for the weights (F32 on the CPU,
  // BF16 for BF16 weights and F16 otherwise on a GPU).
  std::optional<DType> dtype;
  // Replay decode steps as recorded graphs where the backend has them.
  bool graphs = true;
};

struct ModelStats {
  int64_t graph_captures = 0;  // graphs recorded
  int64_t graph_replays = 0;   // forward calls served by a recorded graph
  int64_t eager_forwards = 0;  // forward calls run op by op
};

class Model {
 public:
  // Opens the file, reads the config and binds the weights. The backend must outlive the model.
  // progress(done_bytes, total_bytes) follows the weights onto the backend.
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path, Backend* backend,
                                               const LoadProgress& progress = {},
                                               const ModelOptions& options = {});
  static StatusOr<std::unique_ptr<Model>> FromFile(std::unique_ptr<GgufFile> file, Backend* backend,
                                                   const LoadProgress& progress = {},
                                                   const ModelOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const GgufFile& file() const { return *file_; }
  // Weights as the backend uses them, and as views of the mapped file.
  const ModelWeights& weights() const { return weights_; }
  const ModelWeights& host_weights() const { return host_weights_; }
  Backend& backend() { return *backend_; }
  DType dtype() const { return dtype_; }
  KvCacheShape CacheShape(int64_t num_blocks, int64_t block_size = 16) const;
  const ModelStats& stats() const { return stats_; }
  void set_graphs_enabled(bool on) { graphs_enabled_ = on; }

  // Allocates the workspace for steps of up to n_tokens tokens and n_out logits rows now (so a
  // memory plan made afterwards sees it). Forward grows it on demand otherwise.
  Status ReserveWorkspace(int64_t n_tokens, int64_t n_out);

  // Runs the batch; K/V of its tokens are written into `cache`. logits receives
  // [batch.logits_indices.size(), n_vocab] floats (host memory); null: the logits stay in the
  // backend for Sample (and the call may return before the backend finishes).
  Status Forward(const ForwardBatch& batch, KvCache& cache, std::vector<float>* logits);

  // The backend's Sample op (backend/cpu/sample/sample.h) over the first rows.size() logits rows
  // of the last Forward: one upload of rows and edits, one download of `out`. The rows' edits
  // change those logits rows in place. Returns once the backend has finished the step (also for
  // no rows), with the step's error if any.
  Status Sample(std::span<const SampleRow> rows, std::span<const LogitEdit> edits,
                std::vector<SampleOut>* out);
  // Copies logits row `row` of the last Forward (as it is now) to host memory [n_vocab].
  Status DownloadLogitsRow(int64_t row, float* out);

 private:
  // Device pointers and sizes of one step's metadata (ForwardBatch uploaded).
  struct StepMeta {
    const int32_t *ids, *pos, *slots, *cu, *lens, *tables, *out_idx;
    int64_t n_tokens, n_seqs, n_out, table_stride;
  };
  struct Graph {
    std::unique_ptr<BackendBuffer> meta;  // fixed metadata buffer the graph reads
    std::vector<void*> cache_pools;       // K/V pools the graph was recorded with
    std::unique_ptr<BackendGraph> graph;
  };

  Status EnsureWorkspace(int64_t n_tokens, int64_t n_out);
  Status RunLayers(const StepMeta& s, KvCache& cache);
  Status ForwardEager(const ForwardBatch& b, KvCache& cache);
  bool GraphEligible(const ForwardBatch& b) const;
  Status ForwardGraph(const ForwardBatch& b, KvCache& cache);

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  ModelWeights host_weights_;
  Backend* backend_ = nullptr;
  DType dtype_ = DType::kF32;
  bool graphs_enabled_ = true;
  ModelStats stats_;
  // Workspace (backend memory), grown on demand; growing drops the recorded graphs.
  int64_t ws_tokens_ = 0, ws_out_ = 0, ws_meta_ = 0;
  int64_t last_n_out_ = 0;                    // logits rows the last Forward left in logits_
  std::unique_ptr<BackendBuffer> sample_ws_;  // Sample's rows, edits and outputs
  std::vector<char> sample_host_;
  std::unique_ptr<BackendBuffer> x_, xn_, qkv_, attn_, ff_, act_, delta_, out_rows_, logits_, meta_;
  std::map<std::pair<int64_t, int64_t>, Graph> graphs_;  // (batch bucket, table width)
};

}  // namespace forge
