// RunAllReduceBench: see allreduce_bench.h. Each phase runs one thread per rank; a rank that
// fails aborts the collective, so that the others are not left waiting for it.
#include "backend/cuda/allreduce_bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <thread>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"

namespace forge::cuda {
namespace {

// CUDA resources of the peer-copy measurement, released on every return path.
struct PeerResources {
  void* buf[2][2] = {};  // [device][0: source, 1: destination]
  cudaStream_t stream[2] = {};
  cudaEvent_t start = nullptr, stop = nullptr, done1 = nullptr;
  bool enabled[2] = {};  // peer access this measurement turned on (turned off again after)
  ~PeerResources() {
    for (int d = 0; d < 2; ++d) {
      cudaSetDevice(d);
      for (void* p : buf[d]) cudaFree(p);
      if (stream[d]) cudaStreamDestroy(stream[d]);
      if (enabled[d]) cudaDeviceDisablePeerAccess(1 - d);
    }
    cudaSetDevice(0);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    cudaSetDevice(1);
    if (done1) cudaEventDestroy(done1);
    cudaSetDevice(0);
    cudaGetLastError();
  }
};

// Bytes per second each way while devices 0 and 1 copy `bytes` to each other at the same time
// (cudaMemcpyPeerAsync on a stream of each), median of `repeats` after one untimed round.
Status MeasurePeerBandwidth(int64_t bytes, int repeats, double* bytes_per_second, bool* peer) {
  PeerResources r;
  *peer = true;
  for (int d = 0; d < 2; ++d) {
    int can = 0;
    CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, d, 1 - d));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d));
    if (can) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
      if (e == cudaSuccess) {
        r.enabled[d] = true;
      } else if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else {
        return CudaStatus(e, "cudaDeviceEnablePeerAccess");
      }
    } else {
      *peer = false;
    }
    for (void*& p : r.buf[d]) CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));
    CUDA_RETURN_IF_ERROR(cudaMemset(r.buf[d][0], d + 1, bytes));
    CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r.stream[d], cudaStreamNonBlocking));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.start));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&r.stop));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(1));
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&r.done1, cudaEventDisableTiming));
  std::vector<double> seconds;
  for (int i = 0; i <= repeats; ++i) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(r.start, r.stream[0]));
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyPeerAsync(r.buf[1][1], 1, r.buf[0][0], 0, bytes, r.stream[0]));  // 0 -> 1
    CUDA_RETURN_IF_ERROR(cudaSetDevice(1));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(r.stream[1], r.start, 0));
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyPeerAsync(r.buf[0][1], 0, r.buf[1][0], 1, bytes, r.stream[1]));  // 1 -> 0
    CUDA_RETURN_IF_ERROR(cudaEventRecord(r.done1, r.stream[1]));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(r.stream[0], r.done1, 0));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(r.stop, r.stream[0]));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(r.stop));
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, r.start, r.stop));
    if (i > 0) seconds.push_back(ms * 1e-3);
  }
  std::sort(seconds.begin(), seconds.end());
  *bytes_per_second = static_cast<double>(bytes) / seconds[seconds.size() / 2];
  return Status::Ok();
}

// Rank 0's timing events (on device 0).
struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Timer() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  double Seconds() const {
    float ms = 0;
    return cudaEventElapsedTime(&ms, start, stop) == cudaSuccess ? ms * 1e-3 : 0.0;
  }
};

struct Ranks {
  std::vector<std::unique_ptr<Backend>> backends;
  std::unique_ptr<Collective> collective;  // destroyed before the backends
  std::vector<std::unique_ptr<BackendBuffer>> data;
};

// fn(rank) on a thread per rank; the first error. A failing rank aborts the collective.
Status OnRanks(Ranks& ranks, const std::function<Status(int)>& fn) {
  const int n = static_cast<int>(ranks.backends.size());
  std::vector<Status> st(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const Status result = fn(r);
      if (!result.ok()) ranks.collective->Abort();
      Status& slot = st[r];  // (a plain st[r] = ... draws nvcc's [[nodiscard]] warning)
      slot = result;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!st[r].ok()) return st[r].WithContext("rank " + std::to_string(r));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<AllReduceBench> RunAllReduceBench(const AllReduceBenchOptions& o) {
  const int devices = DeviceCount();
  if (devices == 0) return UnavailableError(NoDeviceReason());
  const int n = o.n_gpus > 0 ? o.n_gpus : devices;
  if (n < 2 || n > devices) {
    return InvalidArgumentError("all-reduce bench: " + std::to_string(n) + " GPUs asked, " +
                                std::to_string(devices) + " present (it needs at least 2)");
  }
  if (o.iterations < 1 || o.warmup < 0 || o.hidden < 1) {
    return InvalidArgumentError("all-reduce bench: iterations, warm-up and hidden size");
  }
  AllReduceBench out;
  out.n_gpus = n;
  out.hidden = o.hidden;
  out.iterations = o.iterations;
  ASSIGN_OR_RETURN(DeviceInfo info, GetDeviceInfo(0));
  out.device_name = info.name;
  RETURN_IF_ERROR(MeasurePeerBandwidth(o.peer_bytes, std::max(1, o.peer_repeats),
                                       &out.peer_bytes_per_second, &out.peer_access));

  Ranks ranks;
  std::vector<Backend*> ptrs;
  for (int d = 0; d < n; ++d) {
    ASSIGN_OR_RETURN(auto b, MakeCudaBackend(d));
    ptrs.push_back(b.get());
    ranks.backends.push_back(std::move(b));
  }
  ASSIGN_OR_RETURN(ranks.collective, MakeNcclCollective(ptrs));
  out.collective = ranks.collective->name();
  const int64_t max_tokens = *std::max_element(o.tokens.begin(), o.tokens.end());
  const int64_t max_bytes = max_tokens * o.hidden * 4;
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(auto buf, ranks.backends[r]->Alloc(max_bytes));
    // Zeros stay zeros however often they are summed.
    CUDA_RETURN_IF_ERROR(cudaSetDevice(r));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buf->data(), 0, max_bytes, CudaStreamOf(*ptrs[r])));
    ranks.data.push_back(std::move(buf));
  }
  Timer timer;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer.start));
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer.stop));
  cudaStream_t stream0 = CudaStreamOf(*ptrs[0]);
  Collective& c = *ranks.collective;

  for (int64_t t : o.tokens) {
    AllReduceBenchRow row;
    row.tokens = t;
    row.bytes = t * o.hidden * 4;
    row.floor_seconds = 2.0 * (n - 1) / n * static_cast<double>(row.bytes) /
                        std::max(out.peer_bytes_per_second, 1.0);
    const int64_t floats = t * o.hidden;
    // Op by op: after the warm-up every rank has launched its part, then rank 0 brackets the
    // timed all-reduces with events (the last completes only when every rank's has).
    RETURN_IF_ERROR(OnRanks(ranks, [&](int r) -> Status {
      Backend& be = *ranks.backends[r];
      float* p = ranks.data[r]->f32();
      for (int i = 0; i < o.warmup; ++i) RETURN_IF_ERROR(c.AllReduceSum(r, p, floats));
      RETURN_IF_ERROR(be.Synchronize());
      if (r == 0) CUDA_RETURN_IF_ERROR(cudaEventRecord(timer.start, stream0));
      for (int i = 0; i < o.iterations; ++i) RETURN_IF_ERROR(c.AllReduceSum(r, p, floats));
      if (r == 0) CUDA_RETURN_IF_ERROR(cudaEventRecord(timer.stop, stream0));
      return be.Synchronize();
    }));
    row.eager_seconds = timer.Seconds() / o.iterations;
    if (t <= o.graph_max_tokens) {
      // `iterations` all-reduces recorded into one graph per rank; one untimed replay first.
      RETURN_IF_ERROR(OnRanks(ranks, [&](int r) -> Status {
        Backend& be = *ranks.backends[r];
        float* p = ranks.data[r]->f32();
        RETURN_IF_ERROR(be.BeginCapture());
        Status rec = Status::Ok();
        for (int i = 0; i < o.iterations; ++i) {
          const Status s = c.AllReduceSum(r, p, floats);
          if (!s.ok()) {
            rec = s;
            break;
          }
        }
        auto graph = be.EndCapture();  // ends the capture whatever happened in it
        RETURN_IF_ERROR(rec);
        RETURN_IF_ERROR(graph.status());
        RETURN_IF_ERROR((*graph)->Replay());
        RETURN_IF_ERROR(be.Synchronize());
        if (r == 0) CUDA_RETURN_IF_ERROR(cudaEventRecord(timer.start, stream0));
        RETURN_IF_ERROR((*graph)->Replay());
        if (r == 0) CUDA_RETURN_IF_ERROR(cudaEventRecord(timer.stop, stream0));
        return be.Synchronize();  // the graph is destroyed here, before the collective
      }));
      row.graph_seconds = timer.Seconds() / o.iterations;
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace forge::cuda
