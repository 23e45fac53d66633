// RequestEvents: a mutex + condition variable queue.
#include "engine/request.h"

namespace forge {

void RequestEvents::Push(RequestEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void RequestEvents::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool RequestEvents::Next(RequestEvent* out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || closed_; });
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestEvents::TryNext(RequestEvent* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestEvents::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace forge
