// MakeHostCollective: the ranks' threads meet at a generation-counted barrier; rank 0 sums (in
// rank order) into a shared buffer between two meetings and every rank copies the sum out.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend/collective.h"

namespace forge {
namespace {

class HostCollective : public Collective {
 public:
  explicit HostCollective(int n) : n_(n), posted_(n) {}
  int size() const override { return n_; }
  std::string name() const override { return "host"; }

  Status AllReduceSum(int rank, float* data, int64_t n) override {
    RETURN_IF_ERROR(CheckRank(rank));
    posted_[rank] = data;
    RETURN_IF_ERROR(Meet());
    if (rank == 0) {
      sum_.assign(static_cast<const float*>(posted_[0]), static_cast<const float*>(posted_[0]) + n);
      for (int r = 1; r < n_; ++r) {
        const float* p = static_cast<const float*>(posted_[r]);
        for (int64_t i = 0; i < n; ++i) sum_[i] += p[i];
      }
    }
    RETURN_IF_ERROR(Meet());
    std::memcpy(data, sum_.data(), n * sizeof(float));
    return Meet();  // nobody posts the next op's data before every rank has copied this one's
  }

  Status AllGather(int rank, const void* send, void* recv, int64_t bytes) override {
    RETURN_IF_ERROR(CheckRank(rank));
    posted_[rank] = const_cast<void*>(send);
    RETURN_IF_ERROR(Meet());
    for (int r = 0; r < n_; ++r) {
      std::memcpy(static_cast<char*>(recv) + r * bytes, posted_[r], bytes);
    }
    return Meet();
  }

  void Abort() override {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  Status CheckRank(int rank) const {
    if (rank < 0 || rank >= n_) {
      return InvalidArgumentError("collective: rank " + std::to_string(rank) + " of " +
                                  std::to_string(n_));
    }
    return Status::Ok();
  }
  // Waits until all n ranks have arrived (or the collective is aborted).
  Status Meet() {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) return UnavailableError("collective aborted: another rank failed");
    const uint64_t gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return Status::Ok();
    }
    cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
    if (generation_ == gen) return UnavailableError("collective aborted: another rank failed");
    return Status::Ok();
  }

  const int n_;
  std::vector<void*> posted_;
  std::vector<float> sum_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Collective> MakeHostCollective(int n_ranks) {
  return std::make_unique<HostCollective>(std::max(n_ranks, 1));
}

}  // namespace forge
