// LiveStatus: counter samples and plot points a tick at a time; snapshots as JSON.
#include "server/live_status.h"

#include <algorithm>

namespace forge::server {
namespace {

using nlohmann::json;

const char* StateName(InFlightRequest::State s) {
  switch (s) {
    case InFlightRequest::State::kWaiting:
      return "waiting";
    case InFlightRequest::State::kPrefill:
      return "prefill";
    case InFlightRequest::State::kDecoding:
      return "decoding";
    case InFlightRequest::State::kPreempted:
      return "preempted";
  }
  return "unknown";
}

// {count, window_seconds, p50, p90, p99} of a latency window (percentiles null when empty).
json Percentiles(const LatencyWindow& w, LatencyWindow::Clock::time_point now) {
  const LatencyWindow::Summary s = w.Read({0.5, 0.9, 0.99}, now);
  json j = {{"count", s.count}, {"window_seconds", s.span_seconds}};
  const char* names[] = {"p50", "p90", "p99"};
  for (size_t i = 0; i < 3; ++i) {
    j[names[i]] = s.quantiles.empty() ? json(nullptr) : json(s.quantiles[i]);
  }
  return j;
}

}  // namespace

LiveStatus::LiveStatus(const ServerMetrics* metrics) : metrics_(metrics) {}

LiveStatus::Sample LiveStatus::Take(const EngineStats& s, Clock::time_point now) const {
  Sample x;
  x.t = std::chrono::duration<double>(now - started_).count();
  x.prompt_tokens = s.prompt_tokens;
  x.generation_tokens = s.generation_tokens;
  x.prefix_queries = s.prefix_cache_queries;
  x.prefix_hits = s.prefix_cache_hits;
  return x;
}

json LiveStatus::Point(const EngineStats& s, Clock::time_point now) const {
  const Sample cur = Take(s, now);
  // The reference points: the newest sample at least kRateSeconds (a minute, for the hit rate)
  // old, else the oldest there is.
  auto reference = [&](double age) -> const Sample* {
    const Sample* ref = nullptr;
    for (const Sample& x : samples_) {
      if (ref == nullptr || cur.t - x.t >= age) ref = &x;
      if (cur.t - x.t < age) break;
    }
    return ref;
  };
  double out_rate = 0, prompt_rate = 0, rate_seconds = 0;
  if (const Sample* r = reference(kRateSeconds); r && cur.t > r->t) {
    rate_seconds = cur.t - r->t;
    out_rate = static_cast<double>(cur.generation_tokens - r->generation_tokens) / rate_seconds;
    prompt_rate = static_cast<double>(cur.prompt_tokens - r->prompt_tokens) / rate_seconds;
  }
  json hit_rate = nullptr;  // over the last minute; null when nothing was looked up
  if (const Sample* r = reference(60); r && cur.prefix_queries > r->prefix_queries) {
    hit_rate = static_cast<double>(cur.prefix_hits - r->prefix_hits) /
               static_cast<double>(cur.prefix_queries - r->prefix_queries);
  }
  const double kv_usage =
      s.kv_blocks_total > 0 ? static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total : 0.0;
  return {{"t", cur.t},
          {"output_tokens_per_second", out_rate},
          {"prompt_tokens_per_second", prompt_rate},
          {"rate_seconds", rate_seconds},
          {"device_busy_ratio", s.device_busy_ratio},
          {"running", s.running},
          {"waiting", s.waiting},
          {"preempted", s.preempted},
          {"kv_blocks",
           {{"total", s.kv_blocks_total},
            {"used", s.kv_blocks_used},
            {"cached", s.kv_blocks_cached},
            {"free", s.kv_blocks_free},
            {"usage_ratio", kv_usage}}},
          {"prefix_cache_hit_rate", hit_rate},
          {"ttft_seconds", Percentiles(metrics_->ttft_window(), now)},
          {"itl_seconds", Percentiles(metrics_->itl_window(), now)}};
}

void LiveStatus::Tick(Engine& engine, Clock::time_point now) {
  const EngineStats s = engine.stats();
  std::lock_guard<std::mutex> lock(mu_);
  json p = Point(s, now);
  samples_.push_back(Take(s, now));
  while (samples_.size() > 2 && samples_.back().t - samples_[1].t >= 60) samples_.pop_front();
  history_.push_back(std::move(p));
  while (history_.size() > kHistoryPoints) history_.pop_front();
}

bool LiveStatus::FloorsPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return floors_state_ == Floors::kPending;
}

void LiveStatus::MeasureFloorsOnce(const ModelFacts& facts) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (floors_state_ != Floors::kPending || !facts.measure_floors) return;
    floors_state_ = Floors::kMeasuring;
  }
  StatusOr<DeviceFloors> f = facts.measure_floors();
  std::lock_guard<std::mutex> lock(mu_);
  floors_state_ = Floors::kDone;
  if (f.ok()) {
    floors_ = *f;
  } else {
    floors_error_ = f.status().ToString();
  }
}

json LiveStatus::FactsJson(const ModelFacts& m) const {
  json j = {{"name", m.name},
            {"architecture", m.architecture},
            {"file", m.file},
            {"format", m.format},
            {"device", m.device},
            {"activations", m.dtype},
            {"parameters", m.parameters},
            {"context", m.context},
            {"training_context", m.training_context},
            {"layers", m.layers},
            {"embedding", m.embedding},
            {"heads", m.heads},
            {"kv_heads", m.kv_heads},
            {"vocabulary", m.vocabulary},
            {"weight_bytes_per_step", m.weight_bytes_per_step},
            {"flops_per_token", m.flops_per_token}};
  // Under mu_. The floors: the device's measured rates and what they allow this model.
  json floors = {{"state", floors_state_ == Floors::kDone        ? (floors_ ? "measured" : "failed")
                           : floors_state_ == Floors::kMeasuring ? "measuring"
                           : m.measure_floors                    ? "pending"
                                                                 : "unavailable"}};
  if (floors_) {
    const DeviceFloors& f = *floors_;
    floors["copy_bytes_per_second"] = f.copy_bytes_per_second;
    floors["flops_per_second"] = f.flops_per_second;
    // One sequence's decode reads every weight matrix once a step; prefill is FLOP-bound.
    floors["decode_tokens_per_second"] =
        m.weight_bytes_per_step > 0 ? f.copy_bytes_per_second / m.weight_bytes_per_step : 0.0;
    floors["prefill_tokens_per_second"] =
        m.flops_per_token > 0 ? f.flops_per_second / m.flops_per_token : 0.0;
  }
  if (!floors_error_.empty()) floors["error"] = floors_error_;
  j["floors"] = floors;
  return j;
}

json LiveStatus::Snapshot(Engine& engine, const ModelFacts& facts, bool with_history,
                          Clock::time_point now) {
  const EngineStats s = engine.stats();
  const ServerCounters c = metrics_->Counters();
  const std::vector<InFlightRequest> in_flight = engine.InFlight();
  json requests = json::object();
  for (int i = 0; i < static_cast<int>(Outcome::kCount); ++i) {
    requests[OutcomeName(Outcome(i))] = c.requests[i];
  }
  // Every counter under its /metrics name: the two read the same sources.
  json counters = {{"forge_requests_total", requests},
                   {"forge_prompt_tokens_total", c.prompt_tokens},
                   {"forge_generation_tokens_total", c.generation_tokens},
                   {"forge_time_to_first_token_seconds_count", c.ttft_count},
                   {"forge_inter_token_latency_seconds_count", c.itl_count},
                   {"forge_engine_prompt_tokens_total", s.prompt_tokens},
                   {"forge_engine_generation_tokens_total", s.generation_tokens},
                   {"forge_prefix_cache_queries_total", s.prefix_cache_queries},
                   {"forge_prefix_cache_hits_total", s.prefix_cache_hits},
                   {"forge_preemptions_total", s.preemptions},
                   {"forge_engine_steps_total", s.steps},
                   {"forge_engine_requests_cancelled_total", s.requests_cancelled},
                   {"forge_device_busy_seconds_total", s.device_busy_seconds}};
  constexpr size_t kTableRows = 100;
  json table = json::array();
  for (const InFlightRequest& r : in_flight) {
    if (table.size() >= kTableRows) break;
    table.push_back({{"id", r.id},
                     {"state", StateName(r.state)},
                     {"prompt_tokens", r.prompt_tokens},
                     {"generated_tokens", r.generated_tokens},
                     {"samples", r.samples},
                     {"preemptions", r.preemptions},
                     {"age_seconds", std::chrono::duration<double>(now - r.submitted).count()}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  json j = {{"object", "forge.status"},
            {"uptime_seconds", std::chrono::duration<double>(now - started_).count()},
            {"model", FactsJson(facts)},
            {"now", Point(s, now)},
            {"counters", counters},
            {"in_flight", table},
            {"in_flight_total", in_flight.size()}};
  if (with_history) {
    json h = json::array();
    for (const json& p : history_) h.push_back(p);
    j["history"] = std::move(h);
  }
  return j;
}

}  // namespace forge::server
