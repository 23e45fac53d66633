// Collective: communication among the ranks of a tensor-parallel model, one backend (one device)
// per rank. Every rank's thread calls the same ops in the same order with its own rank; an op is
// queued on that rank's backend, ordered with its other ops (a GPU collective runs on the
// backend's stream and can be recorded into its graphs); on host backends it has completed when
// the call returns.
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"

namespace forge {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // In place: data[0, n) on every rank becomes the elementwise sum over the ranks (F32).
  virtual Status AllReduceSum(int rank, float* data, int64_t n) = 0;
  // recv[r * bytes, (r + 1) * bytes) = rank r's send[0, bytes), on every rank.
  virtual Status AllGather(int rank, const void* send, void* recv, int64_t bytes) = 0;
  // Releases every rank waiting in (or later entering) an op with an error, so that one rank's
  // failure cannot leave the others waiting for it; the collective is unusable afterwards.
  virtual void Abort() = 0;
};

// For host backends (the CPU, the reference): the ranks' threads meet at a barrier; sums are
// taken in rank order, so every rank gets the same bits.
std::unique_ptr<Collective> MakeHostCollective(int n_ranks);

}  // namespace forge
