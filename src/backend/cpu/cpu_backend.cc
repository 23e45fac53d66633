// The CPU backend and the reference backend: host buffers, ops mapped to their CPU functions.
#include <cstring>
#include <vector>

#include "backend/backend.h"

namespace forge {
namespace {

class HostBuffer : public BackendBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_((bytes + 3) / 4) {}
  void* data() override { return bytes_.data(); }
  size_t size() const override { return bytes_.size() * 4; }

 private:
  std::vector<float> bytes_;  // float-aligned storage
};

Status GatherRowsHost(const GatherRowsParams& p) {
  for (int64_t i = 0; i < p.n; ++i) {
    std::memcpy(p.dst + i * p.row_len, p.src + int64_t{p.indices[i]} * p.row_len,
                p.row_len * sizeof(float));
  }
  return Status::Ok();
}

class HostBackendBase : public Backend {
 public:
  StatusOr<std::unique_ptr<BackendBuffer>> Alloc(size_t bytes) override {
    return std::unique_ptr<BackendBuffer>(new HostBuffer(bytes));
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status Synchronize() override { return Status::Ok(); }
  StatusOr<WeightView> PrepareWeight(const WeightView& host) override { return host; }
  StatusOr<const float*> PrepareVector(const float* host, int64_t) override { return host; }
  Status Embedding(const EmbeddingParams& p) override { return embedding_ref(p); }
  Status Rope(const RopeParams& p) override { return rope_ref(p); }
  Status KvWrite(const KvWriteParams& p) override { return kv_write_ref(p); }
  Status Swiglu(const SwigluParams& p) override { return swiglu_ref(p); }
  Status Add(const AddParams& p) override { return add_ref(p); }
  Status GatherRows(const GatherRowsParams& p) override { return GatherRowsHost(p); }
};

class CpuBackend : public HostBackendBase {
 public:
  std::string name() const override { return "cpu"; }
  Status RmsNorm(const RmsNormParams& p) override { return rmsnorm_cpu(p); }
  Status Matmul(const MatmulParams& p) override { return matmul_cpu(p); }
  Status Attention(const AttentionParams& p) override { return attention_cpu(p); }
};

class ReferenceBackend : public HostBackendBase {
 public:
  std::string name() const override { return "reference"; }
  Status RmsNorm(const RmsNormParams& p) override { return rmsnorm_ref(p); }
  Status Matmul(const MatmulParams& p) override { return matmul_ref(p); }
  Status Attention(const AttentionParams& p) override { return attention_ref(p); }
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend() { return std::make_unique<CpuBackend>(); }
std::unique_ptr<Backend> MakeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace forge
