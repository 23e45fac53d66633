// A fixed pool of persistent worker threads for data-parallel loops: ParallelFor splits [0, n)
// into one contiguous share per thread (the caller runs one) and returns when all are done. The
// split never changes what each index computes, so results do not depend on the thread count.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace forge {

class ThreadPool {
 public:
  // threads <= 0: DefaultThreads().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(begin, end) over disjoint ranges covering [0, n): as many parts as there are threads
  // (fewer when n has fewer grains), the grains of `grain` indices dealt out as evenly as they go
  // (Share). Calls from several threads (tensor-parallel ranks on host backends) take turns; a
  // call from inside fn runs inline on the calling thread.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);
  // Replaces the workers by threads - 1 new ones (threads <= 0: DefaultThreads()). Waits for a
  // running ParallelFor; must not be called from inside one.
  void Resize(int threads);

  // Part `index` of [0, n) split into `parts`: whole grains (the last may be partial), part sizes
  // differing by at most one grain, in index order.
  static std::pair<int64_t, int64_t> Share(int64_t n, int64_t grain, int parts, int index);
  // $FORGE_THREADS when set to a positive number, else the physical cores of the process's
  // affinity mask (PhysicalCoresAvailable).
  static int DefaultThreads();

  // The process-wide pool (DefaultThreads() threads until SetGlobalThreads).
  static ThreadPool& Global();
  // Global().Resize(threads): the `--threads` option.
  static void SetGlobalThreads(int threads);

 private:
  void Start(int threads);
  void Stop();
  // Runs the shares of `index` of each call after generation `seen`.
  void WorkerLoop(int index, uint64_t seen);
  void RunShare(int index);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // one ParallelFor (or Resize) at a time
  std::mutex mu_;       // guards the sleeping side of the hand-offs below
  std::condition_variable start_cv_, done_cv_;
  // The current call: set before generation_ moves, read by the workers after.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1;
  int parts_ = 1;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;  // under mu_
};

}  // namespace forge
