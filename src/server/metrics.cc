// Prometheus text rendering of the server's counters and histograms and the engine's gauges.
#include "server/metrics.h"

#include <chrono>
#include <cstdio>

#include "base/logging.h"

namespace forge::server {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void Metric(std::string* out, const char* name, const char* type, const char* help,
            const std::string& value) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
          name + " " + value + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

int64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::Render(const std::string& name, const std::string& help, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    *out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  *out += name + "_sum " + Num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      itl_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      e2e_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}) {}

const char* OutcomeName(Outcome outcome) {
  static const char* kNames[] = {"stop", "length", "cancelled", "error", "rejected"};
  return kNames[static_cast<int>(outcome)];
}

void ServerMetrics::ObserveTtft(double seconds) {
  const auto now = LatencyWindow::Clock::now();
  ttft_.Observe(seconds);
  ttft_window_.Observe(seconds, now);
}

void ServerMetrics::ObserveItl(double seconds) {
  const auto now = LatencyWindow::Clock::now();
  itl_.Observe(seconds);
  itl_window_.Observe(seconds, now);
}

ServerCounters ServerMetrics::Counters() const {
  ServerCounters c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.requests = requests_;
    c.prompt_tokens = prompt_tokens_;
    c.generation_tokens = generation_tokens_;
  }
  c.ttft_count = ttft_.count();
  c.itl_count = itl_.count();
  return c;
}

void ServerMetrics::CountRequest(Outcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[static_cast<int>(outcome)];
}

void ServerMetrics::AddTokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt;
  generation_tokens_ += generated;
}

void ServerMetrics::NoteIgnoredFields(const std::vector<std::string>& names) {
  if (names.empty()) return;
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::vector<std::string> log;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ignored_fields_ += static_cast<int64_t>(names.size());
    for (const std::string& raw : names) {
      std::string name;
      for (char c : raw.substr(0, 64)) name += (c >= 0x20 && c < 0x7f) ? c : '?';
      if (ignored_logged_.size() >= 1024) ignored_logged_.clear();  // bounded
      auto [it, fresh] = ignored_logged_.try_emplace(name, now);
      if (!fresh && now - it->second < 60) continue;
      it->second = now;
      log.push_back(name);
    }
  }
  for (const std::string& name : log) {
    LOG(WARNING) << "serve: ignored the request field '" << name << "' (not known to Forge)";
  }
}

std::string ServerMetrics::Render(const EngineStats& s, bool has_engine) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out +=
        "# HELP forge_requests_total Completion requests by outcome.\n"
        "# TYPE forge_requests_total counter\n";
    for (int i = 0; i < static_cast<int>(Outcome::kCount); ++i) {
      out += std::string("forge_requests_total{outcome=\"") + OutcomeName(Outcome(i)) + "\"} " +
             std::to_string(requests_[i]) + "\n";
    }
    Metric(&out, "forge_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
           std::to_string(prompt_tokens_));
    Metric(&out, "forge_generation_tokens_total", "counter",
           "Tokens generated for finished requests.", std::to_string(generation_tokens_));
    Metric(&out, "forge_request_ignored_fields_total", "counter",
           "Request fields not known to Forge, ignored.", std::to_string(ignored_fields_));
  }
  ttft_.Render("forge_time_to_first_token_seconds", "Submission to first token.", &out);
  itl_.Render("forge_inter_token_latency_seconds", "Gap between consecutive tokens.", &out);
  e2e_.Render("forge_e2e_request_latency_seconds", "Submission to the last token.", &out);
  if (!has_engine) return out;
  Metric(&out, "forge_num_requests_waiting", "gauge", "Requests waiting to run.",
         std::to_string(s.waiting));
  Metric(&out, "forge_num_requests_running", "gauge", "Sequences running.",
         std::to_string(s.running));
  Metric(&out, "forge_num_requests_preempted", "gauge",
         "Waiting sequences that were preempted (waiting to run again).",
         std::to_string(s.preempted));
  Metric(&out, "forge_kv_blocks_capacity", "gauge", "KV cache blocks in the pool.",
         std::to_string(s.kv_blocks_total));
  Metric(&out, "forge_kv_blocks_used", "gauge", "KV blocks referenced by sequences.",
         std::to_string(s.kv_blocks_used));
  Metric(&out, "forge_kv_blocks_cached", "gauge", "Unreferenced KV blocks kept for prefix hits.",
         std::to_string(s.kv_blocks_cached));
  Metric(&out, "forge_kv_blocks_free", "gauge", "Free KV blocks.",
         std::to_string(s.kv_blocks_free));
  const double kv_usage =
      s.kv_blocks_total > 0 ? static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total : 0.0;
  Metric(&out, "forge_kv_cache_usage_ratio", "gauge",
         "Fraction of the KV cache's blocks referenced by sequences (cached ones are free to "
         "take).",
         Num(kv_usage));
  // The names replica routers scrape (the Gateway API Inference Extension's model-server
  // protocol, llm-d), as vLLM spells them; same values as the forge_ gauges above.
  Metric(&out, "vllm:num_requests_waiting", "gauge", "Requests waiting to run.",
         std::to_string(s.waiting));
  Metric(&out, "vllm:num_requests_running", "gauge", "Sequences running.",
         std::to_string(s.running));
  Metric(&out, "vllm:gpu_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full).",
         Num(kv_usage));
  Metric(&out, "vllm:kv_cache_usage_perc", "gauge", "KV cache usage as a fraction (1 = full).",
         Num(kv_usage));
  Metric(&out, "forge_prefix_cache_queries_total", "counter", "Prompt tokens looked up.",
         std::to_string(s.prefix_cache_queries));
  Metric(&out, "forge_prefix_cache_hits_total", "counter", "Prompt tokens found in the cache.",
         std::to_string(s.prefix_cache_hits));
  Metric(&out, "forge_preemptions_total", "counter", "Sequences preempted.",
         std::to_string(s.preemptions));
  Metric(&out, "forge_engine_steps_total", "counter", "Engine steps that ran.",
         std::to_string(s.steps));
  Metric(&out, "forge_engine_prompt_tokens_total", "counter",
         "Prompt tokens computed by the engine's steps (recomputation after preemption too).",
         std::to_string(s.prompt_tokens));
  Metric(&out, "forge_engine_generation_tokens_total", "counter",
         "Tokens sampled by the engine's steps (requests still running too).",
         std::to_string(s.generation_tokens));
  Metric(&out, "forge_engine_requests_cancelled_total", "counter", "Requests cancelled.",
         std::to_string(s.requests_cancelled));
  Metric(&out, "forge_device_busy_seconds_total", "counter",
         "Device time inside the engine steps' forwards and sampling (GPU: CUDA events; CPU: "
         "host wall time).",
         Num(s.device_busy_seconds));
  Metric(&out, "forge_device_busy_ratio", "gauge",
         "Fraction of the wall time of the last 10 s the device was busy with engine steps.",
         Num(s.device_busy_ratio));
  Metric(&out, "forge_engine_stats_time_seconds", "gauge",
         "Engine time (seconds since it started) when the engine counters were last updated: "
         "a counter's delta over this one's is a rate over the same span.",
         Num(s.stats_time_seconds));
  return out;
}

}  // namespace forge::server
