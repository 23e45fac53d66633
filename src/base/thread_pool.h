// A fixed pool of worker threads for data-parallel loops: ParallelFor splits [0, n) into
// contiguous chunks, one per worker, and returns when all are done. The split never changes
// what each index computes, so results do not depend on the thread count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace forge {

class ThreadPool {
 public:
  // threads <= 0: one per hardware thread ($FORGE_THREADS overrides).
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(begin, end) over disjoint chunks covering [0, n); the calling thread takes a chunk.
  // Chunks are multiples of `grain` (except the last). Not reentrant; calls from several threads
  // (tensor-parallel ranks on host backends) take turns.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  // The process-wide pool.
  static ThreadPool& Global();

 private:
  void WorkerLoop(int index);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one ParallelFor at a time
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace forge
