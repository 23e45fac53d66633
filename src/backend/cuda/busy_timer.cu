// BusyTimer: a ring of CUDA event pairs; see busy_timer.h.
#include "backend/cuda/busy_timer.h"

namespace forge::cuda {
namespace {

// Clears the runtime's last error when it is only "not ready" (a query of unfinished work), so
// that the next launch check does not report it.
void ClearNotReady() {
  if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
}

}  // namespace

BusyTimer::~BusyTimer() {
  for (Pair& p : ring_) {
    if (p.begin) cudaEventDestroy(p.begin);
    if (p.end) cudaEventDestroy(p.end);
  }
}

bool BusyTimer::Capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;  // unknown: do not record
  }
  return status != cudaStreamCaptureStatusNone;
}

void BusyTimer::Begin(cudaStream_t stream) {
  if (open_ || Capturing(stream)) return;
  if (pending() == kPairs) {
    Harvest();
    if (pending() == kPairs) {  // the host is kPairs brackets ahead: wait for the oldest
      if (cudaEventSynchronize(ring_[head_ % kPairs].end) != cudaSuccess) cudaGetLastError();
      Harvest();
      if (pending() == kPairs) ++head_;  // it failed: drop it
    }
  }
  Pair& p = ring_[tail_ % kPairs];
  if (!p.begin && cudaEventCreate(&p.begin) != cudaSuccess) {
    p.begin = nullptr;
    cudaGetLastError();
    return;
  }
  if (!p.end && cudaEventCreate(&p.end) != cudaSuccess) {
    p.end = nullptr;
    cudaGetLastError();
    return;
  }
  if (cudaEventRecord(p.begin, stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  open_ = true;
}

void BusyTimer::End(cudaStream_t stream) {
  if (!open_) return;
  open_ = false;
  if (Capturing(stream)) return;  // the bracket is dropped
  if (cudaEventRecord(ring_[tail_ % kPairs].end, stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  ++tail_;
}

double BusyTimer::Seconds() {
  Harvest();
  return seconds_;
}

void BusyTimer::Harvest() {
  while (head_ < tail_) {
    Pair& p = ring_[head_ % kPairs];
    const cudaError_t q = cudaEventQuery(p.end);
    if (q == cudaErrorNotReady) {
      ClearNotReady();
      return;
    }
    if (q == cudaSuccess) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, p.begin, p.end) == cudaSuccess) {
        seconds_ += static_cast<double>(ms) * 1e-3;
      } else {
        cudaGetLastError();
      }
    } else {
      cudaGetLastError();  // a failed step: its bracket is not counted
    }
    ++head_;
  }
}

}  // namespace forge::cuda
