// ServerMetrics: request outcomes, token counts and latency histograms the server records, and
// their rendering with a snapshot of EngineStats in the Prometheus text format (GET /metrics).
// Latencies also go to last-minute windows, whose percentiles the status endpoint shows.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_options.h"
#include "server/latency_window.h"

namespace forge::server {

// A Prometheus histogram (cumulative buckets, sum, count). Thread-safe.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending
  void Observe(double value);
  void Render(const std::string& name, const std::string& help, std::string* out) const;
  int64_t count() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds_.size() + 1], the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

enum class Outcome { kStop, kLength, kCancelled, kError, kRejected, kCount };
// Outcome names as /metrics labels them (forge_requests_total{outcome="..."}).
const char* OutcomeName(Outcome outcome);

// The server's own counters at one moment (the values /metrics shows under the same names).
struct ServerCounters {
  // forge_requests_total by Outcome.
  std::array<int64_t, static_cast<int>(Outcome::kCount)> requests{};
  int64_t prompt_tokens = 0;      // forge_prompt_tokens_total
  int64_t generation_tokens = 0;  // forge_generation_tokens_total
  int64_t ttft_count = 0;         // forge_time_to_first_token_seconds_count
  int64_t itl_count = 0;          // forge_inter_token_latency_seconds_count
};

class ServerMetrics {
 public:
  ServerMetrics();
  // One finished (or refused) completion request.
  void CountRequest(Outcome outcome);
  void AddTokens(int64_t prompt, int64_t generated);
  // Request fields Forge does not know and ignored: counted, and each name logged at most once a
  // minute (names are the client's: shown bounded and printable).
  void NoteIgnoredFields(const std::vector<std::string>& names);
  // A latency: to its histogram and (TTFT, ITL) to its last-minute window.
  void ObserveTtft(double seconds);
  void ObserveItl(double seconds);
  Histogram& e2e() { return e2e_; }
  const LatencyWindow& ttft_window() const { return ttft_window_; }
  const LatencyWindow& itl_window() const { return itl_window_; }
  ServerCounters Counters() const;

  // Every metric; engine gauges from `stats` when has_engine.
  std::string Render(const EngineStats& stats, bool has_engine) const;

 private:
  mutable std::mutex mu_;
  std::array<int64_t, static_cast<int>(Outcome::kCount)> requests_{};
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t ignored_fields_ = 0;
  std::map<std::string, double> ignored_logged_;  // name -> when last logged (steady seconds)
  Histogram ttft_, itl_, e2e_;
  LatencyWindow ttft_window_, itl_window_;
};

}  // namespace forge::server
