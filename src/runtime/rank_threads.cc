// RankThreads.
#include "runtime/rank_threads.h"

namespace forge {

RankThreads::RankThreads(int n) : n_(n < 1 ? 1 : n), results_(n_, Status::Ok()) {
  if (n_ == 1) return;
  for (int r = 0; r < n_; ++r) threads_.emplace_back([this, r] { Loop(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

Status RankThreads::Run(const std::function<Status(int)>& fn,
                        const std::function<void(int)>& on_error) {
  if (n_ == 1) {
    Status s = fn(0);
    if (!s.ok() && on_error) on_error(0);
    return s;
  }
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  on_error_ = on_error ? &on_error : nullptr;
  pending_ = n_;
  ++generation_;
  cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
  on_error_ = nullptr;
  for (const Status& s : results_) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void RankThreads::Loop(int rank) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const std::function<Status(int)>* fn = fn_;
    const std::function<void(int)>* on_error = on_error_;
    lock.unlock();
    Status s = (*fn)(rank);
    if (!s.ok() && on_error != nullptr) (*on_error)(rank);
    lock.lock();
    results_[rank] = std::move(s);
    if (--pending_ == 0) done_cv_.notify_all();
  }
}

}  // namespace forge
