// RankThreads: one thread per tensor-parallel rank, kept for the model's lifetime, so that every
// rank's share of a step is queued at once (each rank's collectives wait for the others).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"

namespace forge {

class RankThreads {
 public:
  // n threads; with n == 1 none: Run calls fn(0) on the caller's thread.
  explicit RankThreads(int n);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return n_; }
  // Runs fn(rank) for every rank at once and waits for all; the first failing rank's error (by
  // rank order), or OK. on_error(rank) is called on the failing rank's thread as soon as it
  // fails (to release ranks waiting for it).
  Status Run(const std::function<Status(int)>& fn, const std::function<void(int)>& on_error = {});

 private:
  void Loop(int rank);

  const int n_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<Status(int)>* fn_ = nullptr;
  const std::function<void(int)>* on_error_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::vector<Status> results_;
};

}  // namespace forge
