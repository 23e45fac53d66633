// ServerMetrics: request outcomes, token counts and latency histograms the server records, and
// their rendering with a snapshot of EngineStats in the Prometheus text format (GET /metrics).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_options.h"

namespace forge::server {

// A Prometheus histogram (cumulative buckets, sum, count). Thread-safe.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending
  void Observe(double value);
  void Render(const std::string& name, const std::string& help, std::string* out) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // [bounds_.size() + 1], the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

enum class Outcome { kStop, kLength, kCancelled, kError, kRejected, kCount };

class ServerMetrics {
 public:
  ServerMetrics();
  // One finished (or refused) completion request.
  void CountRequest(Outcome outcome);
  void AddTokens(int64_t prompt, int64_t generated);
  // Request fields Forge does not know and ignored: counted, and each name logged at most once a
  // minute (names are the client's: shown bounded and printable).
  void NoteIgnoredFields(const std::vector<std::string>& names);
  Histogram& ttft() { return ttft_; }
  Histogram& itl() { return itl_; }
  Histogram& e2e() { return e2e_; }

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
};

}  // namespace forge::server
