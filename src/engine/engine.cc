// Engine: creation (context, KV pool, scheduler), submission checks, cancellation, the loop
// thread and the statistics snapshot. The step itself is in engine_step.cc.
#include "engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "engine/request_state.h"

namespace forge {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }
std::string MiB(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}
std::string Fraction(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

// The KV budget on a backend that reports its memory: reserves the workspace for the largest
// step, then leaves total * (1 - fraction) of the device free. Error when one full context does
// not fit.
StatusOr<int64_t> PlanDeviceKvBudget(ModelRunner& model, const EngineOptions& o, int64_t ctx,
                                     const KvCacheShape& shape, int64_t* workspace_bytes) {
  Backend& be = model.backend();
  int64_t free_before = 0, total = 0;
  be.MemoryInfo(&free_before, &total);
  // Decode steps run padded to a graph bucket (<= the next power of two) tokens and logits rows.
  int64_t rows = 1;
  while (rows < o.max_num_seqs) rows *= 2;
  RETURN_IF_ERROR(model.ReserveWorkspace(std::max<int64_t>(o.max_num_batched_tokens, rows), rows));
  int64_t free_bytes = 0;
  be.MemoryInfo(&free_bytes, &total);
  *workspace_bytes = std::max<int64_t>(free_before - free_bytes, 0);
  const int64_t reserve =
      static_cast<int64_t>(static_cast<double>(total) * (1.0 - o.gpu_memory_fraction));
  const int64_t budget = free_bytes - reserve;
  const int64_t per_ctx = (ctx + shape.block_size - 1) / shape.block_size * shape.bytes_per_block();
  if (budget < per_ctx) {
    return ResourceExhaustedError(
        "engine: no room for the KV cache on " + be.name() + ": " + MiB(free_bytes) + " free of " +
        MiB(total) + " after the weights (" + MiB(WeightMatrixBytes(model.weights(), true)) +
        ") and the workspace (" + MiB(*workspace_bytes) +
        "); gpu_memory_fraction=" + Fraction(o.gpu_memory_fraction) + " keeps " + MiB(reserve) +
        " free, leaving " + MiB(std::max<int64_t>(budget, 0)) + ", but one context of " + Str(ctx) +
        " tokens needs " + MiB(per_ctx) + " as " + DTypeName(shape.dtype) +
        " (lower ctx_size, raise gpu_memory_fraction or use a smaller model)");
  }
  return budget;
}

}  // namespace

Engine::Engine(ModelRunner& model, const Tokenizer* tokenizer, const EngineOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      sampler_(static_cast<int32_t>(model.config().n_vocab)),
      busy_window_(Clock::now()) {}

StatusOr<std::unique_ptr<Engine>> Engine::Create(ModelRunner& model, const Tokenizer* tokenizer,
                                                 const EngineOptions& options) {
  const int64_t ctx = options.ctx_size > 0 ? options.ctx_size : model.config().n_ctx_train;
  if (ctx <= 0) {
    return InvalidArgumentError("engine: ctx_size=" + Str(options.ctx_size) +
                                " and the model states no training context");
  }
  if (options.block_size <= 0) {
    return InvalidArgumentError("engine: block_size=" + Str(options.block_size) + ": must be > 0");
  }
  if (!(options.gpu_memory_fraction > 0.0 && options.gpu_memory_fraction <= 1.0)) {
    return InvalidArgumentError("engine: gpu_memory_fraction=" +
                                Fraction(options.gpu_memory_fraction) + ": must be in (0, 1]");
  }
  if (options.num_kv_blocks < 0) {
    return InvalidArgumentError("engine: num_kv_blocks=" + Str(options.num_kv_blocks) +
                                ": must be >= 0 (0: planned from ctx_size and max_num_seqs)");
  }
  SchedulerOptions so;
  so.block_size = options.block_size;
  so.max_num_seqs = options.max_num_seqs;
  so.max_num_batched_tokens = options.max_num_batched_tokens;
  so.enable_prefix_caching = options.enable_prefix_caching;
  if (model.config().pooling != PoolingType::kNone) {  // encoded whole, nothing kept
    so.enable_prefix_caching = false;
    so.whole_prompts = true;
  }
  so.num_blocks = options.num_kv_blocks;
  if (so.num_blocks == 0) {
    if (options.max_num_seqs <= 0) {
      return InvalidArgumentError("engine: max_num_seqs=" + Str(options.max_num_seqs) +
                                  ": must be > 0");
    }
    const KvCacheShape shape = model.CacheShape(1, options.block_size);
    int64_t budget = options.kv_cache_bytes;
    int64_t free_bytes = 0, total_bytes = 0, workspace_bytes = 0;
    model.backend().MemoryInfo(&free_bytes, &total_bytes);
    const bool plan_device = budget == 0 && total_bytes > 0;
    if (plan_device) {
      SchedulerOptions check = so;  // the limits the workspace is sized by, before allocating
      check.num_blocks = 1;
      RETURN_IF_ERROR(check.Validate());
      ASSIGN_OR_RETURN(budget, PlanDeviceKvBudget(model, options, ctx, shape, &workspace_bytes));
    }
    ASSIGN_OR_RETURN(int64_t blocks, PlanKvBlocks(shape, ctx, options.max_num_seqs, budget));
    so.num_blocks = static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
    if (plan_device) {
      model.backend().MemoryInfo(&free_bytes, &total_bytes);
      const int64_t kv = int64_t{so.num_blocks} * shape.bytes_per_block();
      LOG(INFO) << "memory plan (" << model.backend().name() << ", gpu_memory_fraction "
                << options.gpu_memory_fraction << "): weights "
                << MiB(WeightMatrixBytes(model.weights(), true)) << ", workspace "
                << MiB(workspace_bytes) << ", KV cache " << MiB(kv) << " (" << so.num_blocks
                << " blocks of " << options.block_size << " tokens, " << DTypeName(shape.dtype)
                << ", " << (int64_t{so.num_blocks} * options.block_size)
                << " tokens = " << (int64_t{so.num_blocks} * options.block_size / ctx)
                << " full contexts of " << ctx << "); " << MiB(free_bytes) << " of "
                << MiB(total_bytes) << " free before the KV cache";
    }
  }
  RETURN_IF_ERROR(so.Validate());
  auto engine = std::unique_ptr<Engine>(new Engine(model, tokenizer, options));
  ASSIGN_OR_RETURN(engine->cache_, model.CreateKvCache(so.num_blocks, so.block_size));
  engine->scheduler_ = std::make_unique<Scheduler>(so);
  engine->ctx_size_ = ctx;
  engine->max_context_ = std::min<int64_t>(ctx, int64_t{so.num_blocks} * so.block_size);
  engine->n_vocab_ = static_cast<int32_t>(model.config().n_vocab);
  // The backend's busy time so far belongs to earlier engines on it.
  engine->backend_busy_seen_ = model.backend().BusySeconds();
  if (tokenizer) {
    const auto& eog = tokenizer->vocab().eog;
    engine->eos_ids_.assign(eog.begin(), eog.end());
  } else {
    engine->eos_ids_ = options.eos_ids;
  }
  engine->seed_rng_.seed(options.seed_source ? options.seed_source : std::random_device{}());
  {
    std::lock_guard<std::mutex> lock(engine->stats_mu_);
    engine->stats_.kv_blocks_total = so.num_blocks;
    engine->stats_.kv_blocks_free = so.num_blocks;
  }
  return engine;
}

Engine::~Engine() {
  Stop();
  std::lock_guard<std::mutex> lock(step_mu_);
  DrainInbox();
  std::vector<Request*> left;
  for (auto& [id, r] : requests_) left.push_back(r.get());
  for (Request* r : left) CancelRequest(r, CancelledError("engine shut down"));
  for (RequestId id : done_) requests_.erase(id);
  done_.clear();
}

StatusOr<RequestHandle> Engine::Submit(EngineRequest request) {
  auto r = std::make_unique<Request>();
  if (!request.prompt_ids.empty()) {
    r->prompt = std::move(request.prompt_ids);
  } else if (!request.prompt.empty()) {
    if (!tokenizer_) {
      return InvalidArgumentError(
          "text prompt given but the engine has no tokenizer; "
          "pass prompt_ids");
    }
    r->prompt = tokenizer_->Encode(request.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  const int64_t P = static_cast<int64_t>(r->prompt.size());
  if (P == 0) return InvalidArgumentError("empty prompt");
  for (size_t i = 0; i < r->prompt.size(); ++i) {
    if (r->prompt[i] < 0 || r->prompt[i] >= n_vocab_) {
      return InvalidArgumentError("prompt token " + Str(int64_t(i)) + " = " + Str(r->prompt[i]) +
                                  " is outside the vocabulary of " + Str(n_vocab_));
    }
  }
  if (request.embed != embeds()) {
    const ModelConfig& c = model_.config();
    if (!embeds()) {
      return InvalidArgumentError("the model (" + c.arch + ") does not embed: its GGUF has no " +
                                  c.arch + ".pooling_type");
    }
    return InvalidArgumentError(std::string("the model (") + c.arch + ", pooling " +
                                PoolingName(c.pooling) +
                                ") embeds: it takes embedding requests, not generation");
  }
  if (request.embed) {
    if (request.n != 1) return InvalidArgumentError("an embedding request has n = 1");
    if (request.grammar) return InvalidArgumentError("an embedding request has no grammar");
    if (P > max_embed_tokens()) {
      return InvalidArgumentError("input of " + Str(P) + " tokens exceeds the " +
                                  Str(max_embed_tokens()) +
                                  " an embedding step takes (the model's trained positions and "
                                  "max_num_batched_tokens)");
    }
    request.params = SamplingParams{};
  }
  RETURN_IF_ERROR(request.params.ValidateForVocab(n_vocab_));
  if (request.n < 1 || request.n > options_.max_num_seqs) {
    return InvalidArgumentError("n=" + Str(request.n) + ": must be in [1, max_num_seqs=" +
                                Str(options_.max_num_seqs) + "]");
  }
  if (!request.params.stop.empty() && !tokenizer_) {
    return InvalidArgumentError("stop strings need a tokenizer; the engine has none");
  }
  if (request.grammar && !tokenizer_) {
    return InvalidArgumentError("a grammar needs a tokenizer; the engine has none");
  }
  const int64_t bs = scheduler_->options().block_size;
  const int64_t pool_tokens = int64_t{num_kv_blocks()} * bs;
  const int32_t max_tokens = request.params.max_tokens;
  if (request.embed) {
    r->max_new = 0;  // within max_embed_tokens: the context and the pool hold it
  } else if (max_tokens >= 0) {
    if (P + max_tokens > ctx_size_) {
      return InvalidArgumentError("prompt of " + Str(P) +
                                  " tokens + max_tokens=" + Str(max_tokens) +
                                  " exceeds the context of " + Str(ctx_size_) + " tokens");
    }
    if (P + max_tokens > pool_tokens) {
      return InvalidArgumentError("prompt of " + Str(P) +
                                  " tokens + max_tokens=" + Str(max_tokens) + " needs " +
                                  Str((P + max_tokens + bs - 1) / bs) + " KV blocks of " + Str(bs) +
                                  " tokens; the pool holds " + Str(num_kv_blocks()));
    }
    r->max_new = max_tokens;
  } else {
    if (P >= ctx_size_) {
      return InvalidArgumentError("prompt of " + Str(P) +
                                  " tokens does not fit in the context of " + Str(ctx_size_) +
                                  " tokens (with room for one generated token)");
    }
    if (P >= pool_tokens) {
      return InvalidArgumentError(
          "prompt of " + Str(P) + " tokens does not fit in the KV pool of " + Str(num_kv_blocks()) +
          " blocks of " + Str(bs) + " tokens (with room for one generated token)");
    }
    r->max_new = static_cast<int32_t>(max_context_ - P);
  }
  r->embed = request.embed;
  r->params = std::move(request.params);
  r->n = request.n;
  r->on_event = std::move(request.on_event);
  if (!r->on_event) r->events = std::make_shared<RequestEvents>();
  r->samples.resize(r->n);
  if (tokenizer_) {
    for (auto& s : r->samples) s.text = std::make_unique<TextOutput>(*tokenizer_, r->params.stop);
  }
  if (request.grammar) {
    r->grammar = std::move(request.grammar);
    r->grammar_vocab = GrammarVocab();
    for (auto& s : r->samples) s.matcher.emplace(r->grammar);
  }
  r->submitted = Clock::now();

  RequestHandle handle;
  handle.prompt_tokens = P;
  handle.events = r->events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!r->params.seed) r->params.seed = seed_rng_();
    r->id = next_request_id_++;
    handle.id = r->id;
    handle.seed = *r->params.seed;
    live_.insert(r->id);
    pending_.push_back(std::move(r));
    ++submitted_;
  }
  cv_.notify_all();
  return handle;
}

std::shared_ptr<const TokenVocabView> Engine::GrammarVocab() {
  std::lock_guard<std::mutex> lock(grammar_vocab_mu_);
  if (!grammar_vocab_) grammar_vocab_ = TokenVocabView::FromTokenizer(*tokenizer_);
  return grammar_vocab_;
}

bool Engine::Cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!live_.count(id)) return false;
    cancels_.push_back(id);
  }
  cv_.notify_all();
  return true;
}

bool Engine::embeds() const { return model_.config().pooling != PoolingType::kNone; }
int64_t Engine::embedding_dim() const { return model_.config().n_embd; }
int64_t Engine::max_embed_tokens() const {
  int64_t n = options_.max_num_batched_tokens;
  if (model_.config().n_ctx_train > 0) n = std::min(n, model_.config().n_ctx_train);
  return std::min(n, max_context_);
}

bool Engine::HasWork() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !pending_.empty() || !cancels_.empty() || busy_.load();
}

Status Engine::RunUntilIdle() {
  while (HasWork()) RETURN_IF_ERROR(Step());
  return Status::Ok();
}

void Engine::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::Loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty() || !cancels_.empty() || busy_; });
      if (stop_) return;
    }
    Status s = Step();
    if (!s.ok()) LOG(ERROR) << "engine step: " << s.ToString();
    if (!last_step_ran_) {  // sequences held but none runnable now: do not spin
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(1),
                   [&] { return stop_ || !pending_.empty() || !cancels_.empty(); });
    }
  }
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    s = stats_;
    s.device_busy_ratio = busy_window_.Ratio(Clock::now());
  }
  std::lock_guard<std::mutex> lock(mu_);
  s.waiting += static_cast<int64_t>(pending_.size());
  s.requests_submitted = submitted_;
  return s;
}

}  // namespace forge
