// Engine::Step: drain the inbox, plan, copy-on-write, one forward over the whole plan, then
// sample every sequence that reached its last token, fork, stream events and finish samples.
#include <algorithm>
#include <string>
#include <thread>

#include "base/thread_pool.h"
#include "engine/constrained_sample.h"
#include "engine/engine.h"
#include "engine/kv_block_copy.h"
#include "engine/request_state.h"

namespace forge {

Status Engine::Step() {
  std::lock_guard<std::mutex> lock(step_mu_);
  DrainInbox();
  StepPlan plan = scheduler_->Schedule();
  Status status;
  const Clock::time_point t0 = Clock::now();
  step_gen_tokens_ = 0;
  int64_t prefill_tokens = 0;
  if (!plan.empty()) {
    for (const ScheduledSeq& item : plan.seqs) {
      const bool decode = item.num_tokens == 1 && item.start >= item.seq->num_prompt;
      if (!decode) prefill_tokens += item.num_tokens;
      Request* r = seq_owner_.at(item.seq->id).request;
      if (!r->was_scheduled) {
        r->was_scheduled = true;
        r->scheduled = t0;
      }
    }
    status = RunPlan(plan);
    if (status.ok()) {
      scheduler_->OnStepDone(plan);
      if (embeds()) {
        EmitEmbeddings(plan);
      } else {
        ProcessOutputs(plan);
      }
    } else {
      FailPlan(plan, status);
    }
  }
  for (RequestId id : done_) requests_.erase(id);
  done_.clear();
  busy_ = !scheduler_->empty();
  last_step_ran_ = !plan.empty();
  if (options_.check_invariants) scheduler_->CheckInvariants();
  PublishStats(!plan.empty(), prefill_tokens,
               std::chrono::duration<double>(Clock::now() - t0).count());
  if (!plan.empty() && options_.step_delay.count() > 0) {
    std::this_thread::sleep_for(options_.step_delay);
  }
  return status;
}

void Engine::DrainInbox() {
  std::vector<std::unique_ptr<Request>> incoming;
  std::vector<RequestId> cancels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming.swap(pending_);
    cancels.swap(cancels_);
  }
  for (auto& r : incoming) AdmitRequest(std::move(r));
  for (RequestId id : cancels) {
    auto it = requests_.find(id);
    if (it == requests_.end() || it->second->num_done == it->second->n) continue;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.requests_cancelled;
    }
    CancelRequest(it->second.get(), CancelledError("request " + std::to_string(id) + " cancelled"));
  }
}

void Engine::AdmitRequest(std::unique_ptr<Request> r) {
  r->arrival = next_arrival_++;
  r->forked = r->n == 1;
  const uint64_t seq = next_seq_id_++;
  const int32_t max_len = static_cast<int32_t>(r->prompt.size()) + r->max_new;
  scheduler_->Add(seq, r->prompt, max_len, {r->arrival, 0}, r->n);
  r->samples[0].seq = seq;
  seq_owner_[seq] = {r.get(), 0};
  const RequestId id = r->id;
  requests_[id] = std::move(r);
}

void Engine::CancelRequest(Request* r, const Status& why) {
  for (int32_t i = 0; i < r->n; ++i) {
    if (r->samples[i].done) continue;
    RequestEvent ev;
    ev.request_id = r->id;
    ev.sample = i;
    ev.status = why;
    FinishSample(r, i, &ev);
    Emit(r, std::move(ev));
  }
}

Status Engine::RunPlan(const StepPlan& plan) {
  ForwardBatch batch;
  batch.block_size = scheduler_->options().block_size;
  std::vector<int32_t> tokens;
  for (const ScheduledSeq& item : plan.seqs) {
    const Sequence& s = *item.seq;
    tokens.assign(s.tokens.begin() + item.start, s.tokens.begin() + item.start + item.num_tokens);
    RETURN_IF_ERROR(batch.AddSequence(
        tokens, item.start, s.blocks,
        item.wants_logits ? ForwardBatch::Logits::kLast : ForwardBatch::Logits::kNone));
  }
  batch.Finish();
  // The device work of the forward, bracketed for the busy timer once the host has built the
  // batch (the copies for copy-on-write come first).
  Backend& backend = model_.backend();
  backend.MarkBusyBegin();
  Status status = Status::Ok();
  for (int r = 0; r < model_.tensor_parallel() && status.ok(); ++r) {  // every rank's pools
    status = CopyKvBlocks(model_.backend(r), *cache_, plan.copies, r);
  }
  if (status.ok()) {
    // A model that pools: its vectors come to the host (EmitEmbeddings).
    status = model_.Forward(batch, *cache_, options_.logits_hook || embeds() ? &logits_ : nullptr);
  }
  backend.MarkBusyEnd();
  return status;
}

void Engine::FailPlan(const StepPlan& plan, const Status& why) {
  std::vector<Request*> failed;
  for (const ScheduledSeq& item : plan.seqs) {
    Request* r = seq_owner_.at(item.seq->id).request;
    if (std::find(failed.begin(), failed.end(), r) == failed.end()) failed.push_back(r);
  }
  for (Request* r : failed) CancelRequest(r, why);
}

SampleContext Engine::ContextOf(Request* r, int32_t sample) const {
  SampleContext ctx;
  ctx.request_id = static_cast<uint64_t>(sample);
  ctx.prompt = r->prompt;
  ctx.generated = r->samples[sample].generated;
  ctx.eos_ids = eos_ids_;
  return ctx;
}

Status Engine::ConstrainContext(Request* r, int32_t sample, SampleContext* ctx) {
  return ConstrainSample(*r->samples[sample].matcher, *r->grammar_vocab, n_vocab_, &mask_, ctx);
}

StatusOr<SampleResult> Engine::SampleToken(Request* r, int32_t sample,
                                           std::span<const float> logits) {
  SampleContext ctx = ContextOf(r, sample);
  if (r->grammar) RETURN_IF_ERROR(ConstrainContext(r, sample, &ctx));
  return sampler_.Sample(r->params, ctx, logits);
}

void Engine::ProcessOutputs(const StepPlan& plan) {
  struct Pending {
    Request* request;
    int32_t sample;
    bool fork;     // the request forks now: its samples are drawn on the host
    Status error;  // its row was refused (params invalid for this vocabulary)
  };
  std::vector<Pending> pending;
  sample_rows_.clear();
  size_t row = 0;
  for (const ScheduledSeq& item : plan.seqs) {
    if (!item.wants_logits) continue;
    const Owner owner = seq_owner_.at(item.seq->id);
    Request* r = owner.request;
    if (options_.logits_hook) {
      std::span<const float> logits(logits_.data() + row * n_vocab_, n_vocab_);
      options_.logits_hook({r->id, owner.sample, item.seq->size(), logits});
    }
    ++row;
    Pending p{r, owner.sample, !r->forked, Status::Ok()};
    if (!p.fork && r->grammar) constrained_.push_back(pending.size());
    pending.push_back(std::move(p));
  }
  // The constrained samples' allowed sets, computed while the forward runs on a device, on the
  // host's threads (each sample has a matcher of its own; matchers of one grammar share its
  // automaton, which is locked).
  const int64_t n_constrained = static_cast<int64_t>(constrained_.size());
  if (static_cast<int64_t>(masks_.size()) < n_constrained) masks_.resize(n_constrained);
  mask_contexts_.assign(n_constrained, SampleContext{});
  auto fill = [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      Pending& p = pending[constrained_[j]];
      p.error = ConstrainSample(*p.request->samples[p.sample].matcher, *p.request->grammar_vocab,
                                n_vocab_, &masks_[j], &mask_contexts_[j]);
    }
  };
  if (n_constrained > 1) {
    ThreadPool::Global().ParallelFor(n_constrained, fill);
  } else {
    fill(0, n_constrained);
  }
  size_t next = 0;  // the next constrained sample
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    if (!p.fork) {
      SampleContext ctx = ContextOf(p.request, p.sample);
      if (next < constrained_.size() && constrained_[next] == i) {
        ctx.allowed = mask_contexts_[next].allowed;
        ctx.only_end_allowed = mask_contexts_[next].only_end_allowed;
        ++next;
      }
      if (p.error.ok()) p.error = sample_rows_.Append(p.request->params, ctx, n_vocab_);
    }
    if (p.fork || !p.error.ok()) sample_rows_.AppendIdle();
  }
  constrained_.clear();
  model_.backend().MarkBusyBegin();  // the sampling's device work, after the rows are built
  const Status sampled = model_.Sample(sample_rows_.rows, sample_rows_.edits, &sample_out_,
                                       sample_rows_.allowed, sample_rows_.allowed_words);
  model_.backend().MarkBusyEnd();
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    if (!sampled.ok()) {
      if (p.fork) {
        CancelRequest(p.request, sampled);
      } else {
        AcceptToken(p.request, p.sample, sampled);
      }
    } else if (p.fork) {
      // An idle row has no edits: logits row i is still the model's.
      fork_row_.resize(n_vocab_);
      model_.backend().MarkBusyBegin();
      const Status st = model_.DownloadLogitsRow(static_cast<int64_t>(i), fork_row_.data());
      model_.backend().MarkBusyEnd();
      if (st.ok()) {
        SampleAndFork(p.request, fork_row_);
      } else {
        CancelRequest(p.request, st);
      }
    } else if (!p.error.ok()) {
      AcceptToken(p.request, p.sample, p.error);
    } else {
      AcceptToken(p.request, p.sample, ToSampleResult(sample_out_[i], p.request->params));
    }
  }
}

void Engine::EmitEmbeddings(const StepPlan& plan) {
  const int64_t dim = embedding_dim();
  size_t row = 0;
  for (const ScheduledSeq& item : plan.seqs) {
    if (!item.wants_logits) continue;  // (whole prompts: every sequence of the step)
    const Owner owner = seq_owner_.at(item.seq->id);
    Request* r = owner.request;
    RequestEvent ev;
    ev.request_id = r->id;
    ev.sample = owner.sample;
    ev.embedding.assign(logits_.begin() + row * dim, logits_.begin() + (row + 1) * dim);
    ev.finish = FinishReason::kStop;
    ++row;
    FinishSample(r, owner.sample, &ev);
    Emit(r, std::move(ev));
  }
}

void Engine::SampleAndFork(Request* r, std::span<const float> logits) {
  std::vector<StatusOr<SampleResult>> results;
  for (int32_t i = 0; i < r->n; ++i) results.push_back(SampleToken(r, i, logits));
  for (int32_t i = 1; i < r->n; ++i) {
    const uint64_t child = next_seq_id_++;
    scheduler_->Fork(r->samples[0].seq, child, {r->arrival, i});
    r->samples[i].seq = child;
    seq_owner_[child] = {r, i};
  }
  r->forked = true;
  for (int32_t i = 0; i < r->n; ++i) AcceptToken(r, i, std::move(results[i]));
}

void Engine::AcceptToken(Request* r, int32_t sample, StatusOr<SampleResult> result) {
  Request::Sample& s = r->samples[sample];
  RequestEvent ev;
  ev.request_id = r->id;
  ev.sample = sample;
  if (!result.ok()) {
    ev.status = result.status().WithContext("request " + std::to_string(r->id) + " sample " +
                                            std::to_string(sample));
    FinishSample(r, sample, &ev);
    Emit(r, std::move(ev));
    return;
  }
  const int32_t token = result->token;
  if (s.matcher) {
    if (!AdvanceGrammar(*s.matcher, *r->grammar_vocab, token)) {
      ev.status = InternalError("request " + std::to_string(r->id) + " sample " +
                                std::to_string(sample) + ": token " + std::to_string(token) +
                                " was sampled but the grammar does not allow it");
      FinishSample(r, sample, &ev);
      Emit(r, std::move(ev));
      return;
    }
  }
  const Clock::time_point now = Clock::now();
  if (s.generated.empty()) {
    s.first_token = now;
  } else {
    const double gap = std::chrono::duration<double>(now - s.last_token).count();
    s.itl_sum += gap;
    s.itl_max = std::max(s.itl_max, gap);
    ++s.itl_count;
  }
  s.last_token = now;
  s.generated.push_back(token);
  ++step_gen_tokens_;
  ev.tokens.push_back(token);
  if (r->params.logprobs) ev.logprobs.push_back(std::move(result).value());
  FinishReason finish = CheckTokenStop(r->params, eos_ids_, s.generated);
  if (finish == FinishReason::kNone && s.matcher && s.matcher->IsTerminated()) {
    finish = FinishReason::kStop;  // an end token of the grammar's vocabulary
  }
  if (finish == FinishReason::kNone && static_cast<int64_t>(s.generated.size()) >= r->max_new) {
    finish = FinishReason::kLength;
  }
  if (s.text) ev.text = s.text->Push(token, &finish);
  if (finish != FinishReason::kNone) {
    ev.finish = finish;
    FinishSample(r, sample, &ev);
  } else {
    scheduler_->AppendToken(s.seq, token);
  }
  Emit(r, std::move(ev));
}

void Engine::FinishSample(Request* r, int32_t sample, RequestEvent* ev) {
  Request::Sample& s = r->samples[sample];
  CHECK(!s.done) << "request " << r->id << " sample " << sample << " finished twice";
  ev->finished = true;
  int64_t cached = 0;
  if (s.seq != 0) {
    if (const Sequence* q = scheduler_->Find(s.seq)) {
      ev->timing.preemptions = q->num_preemptions;
      cached = q->num_cached_tokens;
    }
    scheduler_->Remove(s.seq);
    seq_owner_.erase(s.seq);
  }
  const Clock::time_point now = Clock::now();
  auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  ev->usage.prompt_tokens = static_cast<int64_t>(r->prompt.size());
  ev->usage.completion_tokens = static_cast<int64_t>(s.generated.size());
  ev->usage.cached_prompt_tokens = cached;
  ev->timing.queue_seconds = r->was_scheduled ? secs(r->scheduled - r->submitted) : 0;
  ev->timing.total_seconds = secs(now - r->submitted);
  if (!s.generated.empty()) ev->timing.ttft_seconds = secs(s.first_token - r->submitted);
  if (s.itl_count > 0) ev->timing.mean_itl_seconds = s.itl_sum / s.itl_count;
  ev->timing.max_itl_seconds = s.itl_max;
  s.done = true;
  ++r->num_done;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    if (!s.generated.empty()) {
      stats_.ttft_seconds_sum += ev->timing.ttft_seconds;
      ++stats_.ttft_count;
    }
    stats_.itl_seconds_sum += s.itl_sum;
    stats_.itl_count += s.itl_count;
    if (r->num_done == r->n) ++stats_.requests_finished;
  }
  if (r->num_done == r->n) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(r->id);
    done_.push_back(r->id);
  }
}

void Engine::Emit(Request* r, RequestEvent event) {
  const bool last = event.finished && r->num_done == r->n;
  if (r->on_event) {
    r->on_event(std::move(event));
  } else {
    r->events->Push(std::move(event));
    if (last) r->events->Close();
  }
}

void Engine::PublishStats(bool ran, int64_t prefill_tokens, double seconds) {
  const BlockPool& pool = scheduler_->pool();
  const SchedulerStats& ss = scheduler_->stats();
  // The requests in flight, each in the state of its first unfinished sample.
  std::vector<InFlightRequest> in_flight;
  int64_t preempted = 0;
  in_flight.reserve(requests_.size());
  for (const auto& [id, r] : requests_) {
    InFlightRequest f;
    f.id = id;
    f.prompt_tokens = static_cast<int64_t>(r->prompt.size());
    f.samples = r->n;
    f.submitted = r->submitted;
    bool stated = false;
    for (const Request::Sample& s : r->samples) {
      f.generated_tokens += static_cast<int64_t>(s.generated.size());
      const Sequence* seq = s.seq ? scheduler_->Find(s.seq) : nullptr;
      if (seq == nullptr || s.done) continue;
      f.preemptions += seq->num_preemptions;
      const bool again = seq->state == SeqState::kWaiting && seq->num_preemptions > 0;
      preempted += again;
      if (stated) continue;
      stated = true;
      f.state = again                                 ? InFlightRequest::State::kPreempted
                : seq->state == SeqState::kWaiting    ? InFlightRequest::State::kWaiting
                : seq->num_computed < seq->num_prompt ? InFlightRequest::State::kPrefill
                                                      : InFlightRequest::State::kDecoding;
    }
    in_flight.push_back(f);
  }
  std::sort(in_flight.begin(), in_flight.end(),
            [](const InFlightRequest& a, const InFlightRequest& b) { return a.id < b.id; });
  // Device time of the brackets finished since the last call (a GPU's may lag by a step).
  const double busy_total = model_.backend().BusySeconds();
  const double busy = std::max(busy_total - backend_busy_seen_, 0.0);
  backend_busy_seen_ = busy_total;
  std::lock_guard<std::mutex> lock(stats_mu_);
  const Clock::time_point now = Clock::now();
  stats_.device_busy_seconds += busy;
  stats_.stats_time_seconds = std::chrono::duration<double>(now - started_).count();
  if (busy > 0) busy_window_.Add(now, busy);
  stats_.waiting = scheduler_->num_waiting();
  stats_.running = scheduler_->num_running();
  stats_.preempted = preempted;
  in_flight_ = std::move(in_flight);
  stats_.kv_blocks_total = pool.num_blocks();
  stats_.kv_blocks_used = pool.num_used();
  stats_.kv_blocks_cached = pool.num_cached();
  stats_.kv_blocks_free = pool.num_free();
  stats_.prefix_cache_queries = ss.prefix_query_tokens;
  stats_.prefix_cache_hits = ss.prefix_hit_tokens;
  stats_.preemptions = ss.preemptions;
  stats_.cow_copies = ss.cow_copies;
  if (!ran) return;
  ++stats_.steps;
  stats_.prompt_tokens += prefill_tokens;
  stats_.generation_tokens += step_gen_tokens_;
  stats_.busy_seconds += seconds;
}

std::vector<InFlightRequest> Engine::InFlight() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return in_flight_;
}

}  // namespace forge
