// Engine: many requests at once on one ModelRunner: continuous batching (one forward per step over
// a Scheduler's plan), chunked prefill, prefix caching, preemption, forks, cancellation, streamed
// events. The same engine runs on every backend; submission and cancellation are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/busy_window.h"
#include "engine/engine_options.h"
#include "engine/request.h"
#include "engine/sample_rows.h"
#include "engine/text_output.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"
#include "runtime/model_runner.h"
#include "sampling/sampler.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace forge {

class Engine {
 public:
  // The model and tokenizer must outlive the engine. Without a tokenizer only token-id prompts
  // are accepted and events carry no text. Errors: bad options, a KV cache that cannot be made.
  static StatusOr<std::unique_ptr<Engine>> Create(ModelRunner& model, const Tokenizer* tokenizer,
                                                  const EngineOptions& options = {});
  // Stops the loop thread; unfinished requests end with kCancelled ("engine shut down").
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request (thread-safe); it joins the batch at the next step. Errors, before
  // anything is queued: an empty or out-of-vocabulary prompt, bad params or n, stop strings
  // without a tokenizer, and a request that could never fit: prompt + max_tokens beyond the
  // context, or more KV blocks than the pool holds.
  StatusOr<RequestHandle> Submit(EngineRequest request);
  // Cancels a request at the next step boundary (thread-safe; any moment, from any thread or an
  // event callback): its blocks are released and each unfinished sample gets a final event with
  // kCancelled. False when the id is unknown or already finished.
  bool Cancel(RequestId id);

  // One step on the calling thread: admit and cancel, plan, one forward, sample, emit events.
  // Steps are serialized. An error (a failed forward) fails the requests in that step's batch.
  Status Step();
  // Steps until nothing is queued or running (without the loop thread).
  Status RunUntilIdle();
  // Runs Step() on an engine thread whenever there is work, until Stop() or destruction.
  void Start();
  void Stop();

  bool HasWork() const;       // thread-safe
  EngineStats stats() const;  // thread-safe snapshot
  // The requests in flight as of the last step, oldest first (thread-safe snapshot).
  std::vector<InFlightRequest> InFlight() const;
  const EngineOptions& options() const { return options_; }
  int64_t ctx_size() const { return ctx_size_; }
  // Whether the model embeds (its GGUF names a pooling type): it takes embedding requests only
  // (EngineRequest::embed), each at most max_embed_tokens() tokens (one step's budget, at most
  // the model's trained positions), and its vectors have embedding_dim() values.
  bool embeds() const;
  int64_t embedding_dim() const;
  int64_t max_embed_tokens() const;
  int32_t num_kv_blocks() const { return scheduler_->options().num_blocks; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Request;

  Engine(ModelRunner& model, const Tokenizer* tokenizer, const EngineOptions& options);
  void Loop();
  void DrainInbox();
  void AdmitRequest(std::unique_ptr<Request> r);
  void CancelRequest(Request* r, const Status& why);
  Status RunPlan(const StepPlan& plan);
  // Samples every logits row of the step: the backend's Sample op for each row, but for a request
  // that forks now, whose samples are drawn on the host from its downloaded row.
  void ProcessOutputs(const StepPlan& plan);
  // A model that pools: every sequence of the step ends with its vector (logits_ holds them).
  void EmitEmbeddings(const StepPlan& plan);
  // Samples the first token of every sample of a request that forks, and forks it.
  void SampleAndFork(Request* r, std::span<const float> logits);
  SampleContext ContextOf(Request* r, int32_t sample) const;
  // The grammar's view of the tokenizer's vocabulary, made on first use (thread-safe).
  std::shared_ptr<const TokenVocabView> GrammarVocab();
  // For a constrained sample: fills mask_ with its allowed set and points ctx at it. Errors:
  // the matcher's (a grammar past its bounds).
  Status ConstrainContext(Request* r, int32_t sample, SampleContext* ctx);
  void AcceptToken(Request* r, int32_t sample, StatusOr<SampleResult> result);
  void Emit(Request* r, RequestEvent event);
  void FinishSample(Request* r, int32_t sample, RequestEvent* event);
  void FailPlan(const StepPlan& plan, const Status& why);
  StatusOr<SampleResult> SampleToken(Request* r, int32_t sample, std::span<const float> logits);
  void PublishStats(bool ran, int64_t prefill_tokens, double seconds);

  ModelRunner& model_;
  const Tokenizer* tokenizer_;
  EngineOptions options_;
  int64_t ctx_size_ = 0;
  int64_t max_context_ = 0;  // min(ctx_size_, pool tokens)
  int32_t n_vocab_ = 0;
  std::vector<int32_t> eos_ids_;
  std::unique_ptr<KvCache> cache_;
  std::mutex grammar_vocab_mu_;
  std::shared_ptr<const TokenVocabView> grammar_vocab_;

  // Inbox: what other threads hand to the step thread.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Request>> pending_;
  std::vector<RequestId> cancels_;
  std::unordered_set<RequestId> live_;  // submitted and not finished
  RequestId next_request_id_ = 1;
  int64_t submitted_ = 0;
  std::mt19937_64 seed_rng_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<bool> busy_{false};  // the scheduler holds sequences
  std::atomic<bool> last_step_ran_{true};

  // Step state (under step_mu_).
  std::mutex step_mu_;
  std::unique_ptr<Scheduler> scheduler_;
  Sampler sampler_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  struct Owner {
    Request* request;
    int32_t sample;
  };
  std::unordered_map<uint64_t, Owner> seq_owner_;  // sequence id -> request and sample
  std::vector<RequestId> done_;                    // finished during this step
  uint64_t next_seq_id_ = 1;
  uint64_t next_arrival_ = 1;
  std::vector<float> logits_;    // [rows, n_vocab] of the last forward, when the hook wants them
  std::vector<float> fork_row_;  // [n_vocab] the logits row of a request that forks
  SampleRows sample_rows_;
  std::vector<uint32_t> mask_;  // [ceil(n_vocab / 32)] one constrained sample's allowed set
  // One step's constrained samples (indices of its sampled rows), their allowed sets and the
  // contexts pointing at them.
  std::vector<size_t> constrained_;
  std::vector<std::vector<uint32_t>> masks_;
  std::vector<SampleContext> mask_contexts_;
  std::vector<SampleOut> sample_out_;
  int64_t step_gen_tokens_ = 0;

  mutable std::mutex stats_mu_;
  EngineStats stats_;
  std::vector<InFlightRequest> in_flight_;  // as of the last step
  // Backend::BusySeconds() at the last PublishStats (at creation: one engine per backend at a
  // time counts its own steps only).
  double backend_busy_seen_ = 0;
  BusyWindow busy_window_;
  const Clock::time_point started_ = Clock::now();
};

}  // namespace forge
