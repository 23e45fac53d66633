// Backend: the ops of a forward pass on one device. The model calls these with pointers into
// buffers the backend allocated (host memory for the CPU, device memory for CUDA); model code
// only offsets pointers, never reads through them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/add/add.h"
#include "backend/cpu/add_rmsnorm/add_rmsnorm.h"
#include "backend/cpu/attention/attention.h"
#include "backend/cpu/embedding/embedding.h"
#include "backend/cpu/expert_sum/expert_sum.h"
#include "backend/cpu/kv_write/kv_write.h"
#include "backend/cpu/layernorm/layernorm.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/pool/pool.h"
#include "backend/cpu/rmsnorm/rmsnorm.h"
#include "backend/cpu/rope/rope.h"
#include "backend/cpu/route/route.h"
#include "backend/cpu/rope_kv_write/rope_kv_write.h"
#include "backend/cpu/sample/sample.h"
#include "backend/cpu/softcap/softcap.h"
#include "backend/cpu/swiglu/swiglu.h"
#include "base/dtype.h"
#include "base/status.h"

namespace forge {

// Copies rows: dst[i, :] = src[indices[i], :] for i < n; rows of row_len elements of dtype.
struct GatherRowsParams {
  const void* src = nullptr;
  const int32_t* indices = nullptr;
  int64_t n = 0;
  int64_t row_len = 0;
  void* dst = nullptr;
  DType dtype = DType::kF32;
};

// A recorded sequence of a backend's ops (a CUDA graph) that can be replayed: the same kernels
// with the same pointers; what they read from device memory may change between replays.
class BackendGraph {
 public:
  virtual ~BackendGraph() = default;
  virtual Status Replay() = 0;
};

// Memory owned by a backend; freed when destroyed.
class BackendBuffer {
 public:
  virtual ~BackendBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
  float* f32() { return static_cast<float*>(data()); }
  int32_t* i32() { return static_cast<int32_t*>(data()); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  virtual StatusOr<std::unique_ptr<BackendBuffer>> Alloc(size_t bytes) = 0;
  // Host <-> backend copies (plain memcpy on the CPU).
  virtual Status Upload(void* dst, const void* src, size_t bytes) = 0;
  virtual Status Download(void* dst, const void* src, size_t bytes) = 0;
  // Backend -> backend copy, ordered with the ops (memcpy on the CPU).
  virtual Status Copy(void* dst, const void* src, size_t bytes) = 0;
  // Backend -> backend copy of `rows` rows of `width` bytes, from src (rows src_pitch bytes
  // apart) to dst (rows dst_pitch bytes apart), ordered with the ops.
  // The default: a Copy per row.
  virtual Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                        size_t width, size_t rows) {
    for (size_t r = 0; r < rows; ++r) {
      RETURN_IF_ERROR(Copy(static_cast<char*>(dst) + r * dst_pitch,
                           static_cast<const char*>(src) + r * src_pitch, width));
    }
    return Status::Ok();
  }
  // Waits for queued work (no-op on the CPU).
  virtual Status Synchronize() = 0;
  // Memory the backend can still allocate and its total, in bytes (0, 0 when unknown: the CPU).
  virtual void MemoryInfo(int64_t* free_bytes, int64_t* total_bytes) {
    *free_bytes = *total_bytes = 0;
  }

  // Busy time: the caller brackets stretches of device work with MarkBusyBegin / MarkBusyEnd
  // (an engine step's forward, its sampling); BusySeconds is the total time the device spent
  // inside the brackets whose work has completed. Calls come from the one thread that queues the
  // work; unpaired calls are ignored. The default (host backends, whose ops run synchronously):
  // host wall time between the marks. A GPU backend times the brackets on the device, without
  // waiting for them.
  virtual void MarkBusyBegin() {
    if (!host_busy_open_) host_busy_begin_ = std::chrono::steady_clock::now();
    host_busy_open_ = true;
  }
  virtual void MarkBusyEnd() {
    if (!host_busy_open_) return;
    host_busy_open_ = false;
    host_busy_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - host_busy_begin_).count();
  }
  virtual double BusySeconds() { return host_busy_seconds_; }

  // The activation dtype this backend runs a model in by default, given the type most of its
  // matmul weights are stored in (the CPU: always F32).
  virtual DType DefaultActivationType(GgmlType weight_type) const = 0;
  // Whether ops can run in `dtype` at all (the CPU: F32 only).
  virtual bool SupportsActivationType(DType dtype) const = 0;

  // Op recording: between BeginCapture and EndCapture ops are recorded, not run (their Status
  // still reports argument errors). Backends without graphs return Unimplemented.
  virtual bool SupportsGraphs() const { return false; }
  virtual Status BeginCapture() { return UnimplementedError(name() + ": no graphs"); }
  virtual StatusOr<std::unique_ptr<BackendGraph>> EndCapture() {
    return UnimplementedError(name() + ": no graphs");
  }

  // Makes a host weight (a view of the mapped file) usable by this backend's ops with
  // activations of type `act`: the CPU reads it where it is; a GPU backend copies it to device
  // memory (converted to `act` unless it can use the stored format) and keeps the copy for the
  // backend's lifetime.
  virtual StatusOr<WeightView> PrepareWeight(const WeightView& host, DType act) = 0;
  // Whether PrepareStacked is available: several weights with the same columns stacked by rows
  // into one tensor, so that one matmul replaces several (q/k/v, gate/up).
  virtual bool StacksWeights() const { return false; }
  virtual StatusOr<WeightView> PrepareStacked(const std::vector<WeightView>& /*parts*/,
                                              DType /*act*/) {
    return UnimplementedError(name() + ": no stacked weights");
  }
  // Bytes of backend memory PrepareWeight(host, act) will take (0: none, it is used in place).
  virtual int64_t PreparedWeightBytes(const WeightView& host, DType act) const = 0;
  // The same for a 1-D F32 vector (norm weights, biases); null stays null.
  virtual StatusOr<const float*> PrepareVector(const float* host, int64_t n) = 0;

  virtual Status Embedding(const EmbeddingParams& p) = 0;
  virtual Status RmsNorm(const RmsNormParams& p) = 0;
  virtual Status AddRmsNorm(const AddRmsNormParams& p) = 0;
  virtual Status LayerNorm(const LayerNormParams& p) = 0;
  // One pooled vector per sequence of the step (pool.h).
  virtual Status Pool(const PoolParams& p) = 0;
  virtual Status Matmul(const MatmulParams& p) = 0;
  // Bytes of x's one row in the form this backend's matmul of w reads directly (MatmulParams::xq,
  // written by the op producing x: AddRmsNormParams / SwigluParams::out_q), for m activation
  // rows of x_type giving out_type; 0 where that matmul takes no such form.
  virtual int64_t QuantizedActivationBytes(const WeightView& /*w*/, int64_t /*m*/, DType /*x_type*/,
                                           DType /*out_type*/) const {
    return 0;
  }
  virtual Status Rope(const RopeParams& p) = 0;
  virtual Status KvWrite(const KvWriteParams& p) = 0;
  virtual Status RopeKvWrite(const RopeKvWriteParams& p) = 0;
  virtual Status Attention(const AttentionParams& p) = 0;
  virtual Status Swiglu(const SwigluParams& p) = 0;
  virtual Status Add(const AddParams& p) = 0;
  virtual Status SoftCap(const SoftCapParams& p) = 0;
  // Mixture of experts: the router's choice, and the weighted sum of the experts' outputs.
  virtual Status Route(const RouteParams& p) = 0;
  virtual Status ExpertSum(const ExpertSumParams& p) = 0;
  virtual Status GatherRows(const GatherRowsParams& p) = 0;
  // Chooses each row's next token where the logits are; rows, edits and out in backend memory.
  virtual Status Sample(const SampleParams& p) = 0;

 private:
  // The default busy timer.
  std::chrono::steady_clock::time_point host_busy_begin_;
  bool host_busy_open_ = false;
  double host_busy_seconds_ = 0;
};

// The CPU backend (always available).
std::unique_ptr<Backend> MakeCpuBackend();
// The reference backend: every op's _ref twin, single-threaded; slow, for tests.
std::unique_ptr<Backend> MakeReferenceBackend();

}  // namespace forge
