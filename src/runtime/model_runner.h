// ModelRunner: runs a loaded Model (model/model.h) over ForwardBatches on a Backend, writing K/V
// into a paged KvCache: the weights on the backend, the workspace, the step's metadata, and the
// architecture's forward (model/architecture.h) over a StepContext. Decode steps on a backend
// with graphs are recorded once per (batch bucket, block-table width) and replayed.
// Tensor parallelism: one backend (device) per rank, each holding its shard of the weights
// (model_shard.h) and of the KV cache; every rank runs the same step on its own thread, the
// ranks' partial sums meet through a Collective, and the logits are gathered on rank 0, where
// sampling runs.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/collective.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_shard.h"
#include "model/model_weights.h"
#include "model/step_context.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"
#include "runtime/rank_threads.h"

namespace forge {

struct RunnerOptions {
  // Activations and KV cache; empty: the backend's default for the weights (F32 on the CPU,
  // BF16 for BF16 weights and F16 otherwise on a GPU).
  std::optional<DType> dtype;
  // Replay decode steps as recorded graphs where the backend has them.
  bool graphs = true;
};

struct RunnerStats {
  int64_t graph_captures = 0;  // graphs recorded
  int64_t graph_replays = 0;   // forward calls served by a recorded graph
  int64_t eager_forwards = 0;  // forward calls run op by op
};

class ModelRunner {
 public:
  // Opens the file, reads the config and binds the weights. The backend must outlive the runner.
  // progress(done_bytes, total_bytes) follows the weights onto the backend.
  static StatusOr<std::unique_ptr<ModelRunner>> Load(const std::string& path, Backend* backend,
                                                     const LoadProgress& progress = {},
                                                     const RunnerOptions& options = {});
  static StatusOr<std::unique_ptr<ModelRunner>> FromFile(std::unique_ptr<GgufFile> file,
                                                         Backend* backend,
                                                         const LoadProgress& progress = {},
                                                         const RunnerOptions& options = {});
  // Tensor parallelism over ranks.size() backends (one device each; they and the collective
  // must outlive the runner). The collective has ranks.size() ranks; it may be null for one rank.
  // Shards that cannot be cut (model_shard.h) are refused with the reason.
  static StatusOr<std::unique_ptr<ModelRunner>> LoadParallel(const std::string& path,
                                                             std::vector<Backend*> ranks,
                                                             Collective* collective,
                                                             const LoadProgress& progress = {},
                                                             const RunnerOptions& options = {});
  static StatusOr<std::unique_ptr<ModelRunner>> FromFileParallel(std::unique_ptr<GgufFile> file,
                                                                 std::vector<Backend*> ranks,
                                                                 Collective* collective,
                                                                 const LoadProgress& progress = {},
                                                                 const RunnerOptions& options = {});
  ~ModelRunner();

  const Model& model() const { return model_; }
  const ModelConfig& config() const { return model_.config; }
  const GgufFile& file() const { return *model_.file; }
  // Ranks of tensor parallelism (1: none).
  int tensor_parallel() const { return static_cast<int>(ranks_.size()); }
  // A rank's weights as its backend uses them, and as host views (of the mapped file, or of the
  // shard's copies of column ranges).
  const ModelWeights& weights(int rank = 0) const { return ranks_[rank]->weights; }
  const ModelWeights& host_weights(int rank = 0) const { return ranks_[rank]->shard.weights; }
  const ShardPlan& shard_plan(int rank = 0) const { return ranks_[rank]->plan; }
  // Rank 0's backend holds the logits and runs Sample.
  Backend& backend(int rank = 0) { return *ranks_[rank]->backend; }
  DType dtype() const { return dtype_; }
  // The KV cache of one rank (its KV heads); every rank's pools have this shape.
  KvCacheShape CacheShape(int64_t num_blocks, int64_t block_size = 16) const;
  // A KV cache with pools on every rank's backend.
  StatusOr<std::unique_ptr<KvCache>> CreateKvCache(int64_t num_blocks, int64_t block_size = 16);
  const RunnerStats& stats() const { return stats_; }
  void set_graphs_enabled(bool on) { graphs_enabled_ = on; }

  // Allocates the workspace for steps of up to n_tokens tokens and n_out logits rows now (so a
  // memory plan made afterwards sees it). Forward grows it on demand otherwise.
  Status ReserveWorkspace(int64_t n_tokens, int64_t n_out);

  // Runs the batch; K/V of its tokens are written into `cache`. logits receives
  // [batch.logits_indices.size(), n_vocab] floats (host memory); null: the logits stay in the
  // backend for Sample (and the call may return before the backend finishes).
  Status Forward(const ForwardBatch& batch, KvCache& cache, std::vector<float>* logits);

  // The backend's Sample op (backend/cpu/sample/sample.h) over the first rows.size() logits rows
  // of the last Forward: one upload of rows, edits and allowed sets (bitmask rows of
  // allowed_words words, SampleRow::allowed_row), one download of `out`. The rows' edits and
  // allowed sets change those logits rows in place. Returns once the backend has finished the
  // step (also for no rows), with the step's error if any.
  Status Sample(std::span<const SampleRow> rows, std::span<const LogitEdit> edits,
                std::vector<SampleOut>* out, std::span<const uint32_t> allowed = {},
                int64_t allowed_words = 0);
  // Copies logits row `row` of the last Forward (as it is now) to host memory [n_vocab].
  Status DownloadLogitsRow(int64_t row, float* out);
  // OK unless the model pools (config().pooling): then Forward's rows are pooled vectors, and
  // Sample and DownloadLogitsRow refuse with this error.
  Status CheckHasLogits() const;

 private:
  struct Graph {
    std::unique_ptr<BackendBuffer> meta;  // fixed metadata buffer the graph reads
    std::vector<void*> cache_pools;       // K/V pools the graph was recorded with
    std::unique_ptr<BackendGraph> graph;
  };

  // One rank's shard, backend and workspace.
  struct Rank {
    int index = 0;
    Backend* backend = nullptr;
    ShardPlan plan;
    WeightShard shard;     // config (the shard's dims) and host views
    ModelWeights weights;  // as the backend uses them
    // Workspace (backend memory), grown on demand; growing drops the recorded graphs.
    int64_t ws_tokens = 0, ws_out = 0, ws_meta = 0;
    std::unique_ptr<BackendBuffer> x, xn, qkv, attn, ff, act, delta, out_rows, logits, meta;
    // One-token steps: xn, attn and act in the form the backend's matmul reads directly (null
    // where no layer's matmul takes one; Backend::QuantizedActivationBytes).
    std::unique_ptr<BackendBuffer> xn_q, attn_q, act_q;
    std::unique_ptr<BackendBuffer> moe;  // the mixture-of-experts block's (model/moe.h)
    // Tensor parallelism: this rank's logits [ws_out, vocab_pad] and everyone's, gathered.
    std::unique_ptr<BackendBuffer> logits_part, logits_all;
    std::map<std::pair<int64_t, int64_t>, Graph> graphs;  // (batch bucket, table width)
    // The step's KV pools of this rank, per layer (StepKv points at these).
    std::vector<void*> k_pools, v_pools;
  };

  ModelRunner() = default;
  Status EnsureWorkspace(Rank& r, int64_t n_tokens, int64_t n_out);
  // The architecture's forward over rank r's step, then (tensor parallelism) the logits gathered.
  Status RunStep(Rank& r, const StepMeta& meta, KvCache& cache);
  Status GatherLogits(Rank& r, int64_t n_out);
  Status ForwardEager(Rank& r, const ForwardBatch& b, KvCache& cache);
  bool GraphEligible(const ForwardBatch& b) const;
  static std::vector<int32_t> GraphMeta(const ForwardBatch& b, int64_t B, int64_t W);
  // Replays (recording first when needed) rank r's graph for B sequences and tables W wide, with
  // the step's metadata h (GraphMeta) uploaded into the graph's own buffer.
  Status ForwardGraph(Rank& r, const std::vector<int32_t>& h, int64_t B, int64_t W, KvCache& cache);
  // Runs fn on every rank at once (each on its own thread under tensor parallelism). A failure
  // aborts the collective: the runner refuses further steps (the ranks' queues are out of step).
  Status OnRanks(const std::function<Status(Rank&)>& fn);
  // Waits for every rank's queued work; the first error.
  Status SynchronizeRanks();

  Model model_;
  DType dtype_ = DType::kF32;
  bool graphs_enabled_ = true;
  RunnerStats stats_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  Collective* collective_ = nullptr;
  std::unique_ptr<RankThreads> threads_;
  Status broken_ = Status::Ok();              // why a tensor-parallel step left the ranks unusable
  int64_t last_n_out_ = 0;                    // logits rows the last Forward left on rank 0
  std::unique_ptr<BackendBuffer> sample_ws_;  // Sample's rows, edits and outputs
  std::vector<char> sample_host_;
};

}  // namespace forge
