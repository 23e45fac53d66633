// LiveStatus: the live operations view behind GET /status and /status/stream: rates over the last
// seconds, the engine's queues and KV blocks, latency percentiles over the last minute, the
// requests in flight and the model's facts, as one JSON snapshot. Its counters are read where
// /metrics reads them (ServerMetrics, EngineStats) and carry /metrics' names, so the two agree.
// Tick() (once a second) keeps a short history of the counters, the rates' reference points.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "server/metrics.h"
#include "server/model_facts.h"

namespace forge::server {

class LiveStatus {
 public:
  using Clock = std::chrono::steady_clock;
  // Rates are over this much of the recent past (the whole history when it is shorter).
  static constexpr double kRateSeconds = 5;
  // Points kept for a new subscriber's plots (one a second).
  static constexpr size_t kHistoryPoints = 300;

  explicit LiveStatus(const ServerMetrics* metrics);

  // Samples the counters and records a plot point. Call about once a second.
  void Tick(Engine& engine, Clock::time_point now = Clock::now());
  // The snapshot (docs/server.md, "Live operations"); with_history adds the recorded points.
  nlohmann::json Snapshot(Engine& engine, const ModelFacts& facts, bool with_history,
                          Clock::time_point now = Clock::now());
  // Measures the floors once when facts has a measurer (the first call does the work; call it
  // off the I/O threads). Later snapshots carry them.
  void MeasureFloorsOnce(const ModelFacts& facts);
  // Whether the floors are still to be measured (no measurement started).
  bool FloorsPending() const;

 private:
  struct Sample {  // the counters rates are made of, at one time
    double t = 0;  // seconds since the server started
    int64_t prompt_tokens = 0, generation_tokens = 0, prefix_queries = 0, prefix_hits = 0;
  };
  Sample Take(const EngineStats& s, Clock::time_point now) const;
  // Rates, queues, KV and percentiles now (history, under mu_, gives the reference points).
  nlohmann::json Point(const EngineStats& s, Clock::time_point now) const;
  nlohmann::json FactsJson(const ModelFacts& facts) const;

  const ServerMetrics* metrics_;
  const Clock::time_point started_ = Clock::now();
  mutable std::mutex mu_;
  std::deque<Sample> samples_;          // the last minute's ticks
  std::deque<nlohmann::json> history_;  // plot points, oldest first
  enum class Floors { kPending, kMeasuring, kDone } floors_state_ = Floors::kPending;
  std::optional<DeviceFloors> floors_;
  std::string floors_error_;
};

}  // namespace forge::server
