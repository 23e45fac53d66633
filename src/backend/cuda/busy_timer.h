// BusyTimer: device time of bracketed stretches of one stream's work, from pairs of CUDA events
// kept in a small ring: elapsed times are added once the device has reached a pair's end,
// found by non-blocking queries. The CUDA backend's MarkBusyBegin / MarkBusyEnd / BusySeconds.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

namespace forge::cuda {

class BusyTimer {
 public:
  BusyTimer() = default;
  ~BusyTimer();
  BusyTimer(const BusyTimer&) = delete;
  BusyTimer& operator=(const BusyTimer&) = delete;

  // Records the begin (end) event of a bracket on `stream`. Nothing is recorded while the stream
  // is being captured into a graph (an event there would become part of the graph); a Begin
  // while a bracket is open and an End without one are ignored. Never waits for the device,
  // except when kPairs brackets are still running on it (then for the oldest).
  void Begin(cudaStream_t stream);
  void End(cudaStream_t stream);
  // Device seconds inside every bracket the device has finished (the others count later).
  double Seconds();
  // Brackets recorded whose end the device has not been seen to reach.
  int64_t pending() const { return tail_ - head_; }

  static constexpr int kPairs = 64;

 private:
  struct Pair {
    cudaEvent_t begin = nullptr;
    cudaEvent_t end = nullptr;
  };
  // Adds the elapsed time of the finished pairs at the head of the ring.
  void Harvest();
  static bool Capturing(cudaStream_t stream);

  std::array<Pair, kPairs> ring_{};  // events created on first use
  int64_t head_ = 0;                 // oldest pending pair (index mod kPairs)
  int64_t tail_ = 0;                 // the pair the next Begin opens
  bool open_ = false;
  double seconds_ = 0;
};

}  // namespace forge::cuda
