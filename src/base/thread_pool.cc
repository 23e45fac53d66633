// ThreadPool: workers watch a generation counter (spinning briefly, then sleeping on a condition
// variable), run their share of the call, and count down; the caller runs share 0 and waits the
// same way.
#include "base/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#include "base/cpu_topology.h"

namespace forge {
namespace {

// Polls of an atomic before a thread sleeps: long enough to bridge the gap between the ops of a
// forward pass, short enough not to hold a core while the process idles.
constexpr int kSpinPolls = 1 << 13;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

thread_local bool t_inside_call = false;

}  // namespace

ThreadPool::ThreadPool(int threads) { Start(threads); }

ThreadPool::~ThreadPool() { Stop(); }

int ThreadPool::DefaultThreads() {
  if (const char* env = std::getenv("FORGE_THREADS")) {
    const int t = std::atoi(env);
    if (t > 0) return t;
  }
  return PhysicalCoresAvailable();
}

ThreadPool& ThreadPool::Global() {
  static ThreadPool pool;
  return pool;
}

void ThreadPool::SetGlobalThreads(int threads) { Global().Resize(threads); }

void ThreadPool::Start(int threads) {
  if (threads <= 0) threads = DefaultThreads();
  stop_ = false;
  // New workers wait for the next call, not the last one.
  const uint64_t now = generation_.load(std::memory_order_acquire);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, now] { WorkerLoop(i, now); });
}

void ThreadPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::Resize(int threads) {
  std::lock_guard<std::mutex> call(call_mu_);
  if (threads <= 0) threads = DefaultThreads();
  if (threads == size()) return;
  Stop();
  Start(threads);
}

std::pair<int64_t, int64_t> ThreadPool::Share(int64_t n, int64_t grain, int parts, int index) {
  grain = std::max<int64_t>(1, grain);
  const int64_t grains = (n + grain - 1) / grain;
  const int64_t begin = grains * index / parts * grain;
  const int64_t end = grains * (index + 1) / parts * grain;
  return {std::min(n, begin), std::min(n, end)};
}

void ThreadPool::RunShare(int index) {
  if (index >= parts_) return;
  const auto [begin, end] = Share(n_, grain_, parts_, index);
  if (begin < end) (*fn_)(begin, end);
}

void ThreadPool::WorkerLoop(int index, uint64_t seen) {
  t_inside_call = true;  // a worker's own ParallelFor calls run inline
  for (;;) {
    bool moved = false;
    for (int i = 0; i < kSpinPolls; ++i) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        moved = true;
        break;
      }
      CpuRelax();
    }
    if (!moved) {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock,
                     [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    RunShare(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (t_inside_call || workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  const int64_t grains = (n + grain - 1) / grain;
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  parts_ = static_cast<int>(std::min<int64_t>(size(), grains));
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  t_inside_call = true;
  RunShare(0);
  t_inside_call = false;
  for (int i = 0; i < kSpinPolls; ++i) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    CpuRelax();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
}

}  // namespace forge
