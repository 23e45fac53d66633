// Backend: the ops of a forward pass on one device. The model calls these with pointers into
// buffers the backend allocated (host memory for the CPU, device memory for CUDA); model code
// only offsets pointers, never reads through them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/add/add.h"
#include "backend/cpu/attention/attention.h"
#include "backend/cpu/embedding/embedding.h"
#include "backend/cpu/kv_write/kv_write.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/rmsnorm/rmsnorm.h"
#include "backend/cpu/rope/rope.h"
#include "backend/cpu/swiglu/swiglu.h"
#include "base/status.h"

namespace forge {

// Copies rows: dst[i, :] = src[indices[i], :] for i < n; rows of row_len floats.
struct GatherRowsParams {
  const float* src = nullptr;
  const int32_t* indices = nullptr;
  int64_t n = 0;
  int64_t row_len = 0;
  float* dst = nullptr;
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
  // Waits for queued work (no-op on the CPU).
  virtual Status Synchronize() = 0;

  // Makes a host weight (a view of the mapped file) usable by this backend's ops: the CPU reads
  // it where it is; a GPU backend copies it to device memory (possibly in another format) and
  // keeps the copy for the backend's lifetime.
  virtual StatusOr<WeightView> PrepareWeight(const WeightView& host) = 0;
  // The same for a 1-D F32 vector (norm weights, biases); null stays null.
  virtual StatusOr<const float*> PrepareVector(const float* host, int64_t n) = 0;

  virtual Status Embedding(const EmbeddingParams& p) = 0;
  virtual Status RmsNorm(const RmsNormParams& p) = 0;
  virtual Status Matmul(const MatmulParams& p) = 0;
  virtual Status Rope(const RopeParams& p) = 0;
  virtual Status KvWrite(const KvWriteParams& p) = 0;
  virtual Status Attention(const AttentionParams& p) = 0;
  virtual Status Swiglu(const SwigluParams& p) = 0;
  virtual Status Add(const AddParams& p) = 0;
  virtual Status GatherRows(const GatherRowsParams& p) = 0;
};

// The CPU backend (always available).
std::unique_ptr<Backend> MakeCpuBackend();
// The reference backend: every op's _ref twin, single-threaded; slow, for tests.
std::unique_ptr<Backend> MakeReferenceBackend();

}  // namespace forge
