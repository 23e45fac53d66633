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
  const size_t row = p.row_len * DTypeSize(p.dtype);
  for (int64_t i = 0; i < p.n; ++i) {
    std::memcpy(static_cast<char*>(p.dst) + i * row,
                static_cast<const char*>(p.src) + int64_t{p.indices[i]} * row, row);
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
  Status Copy(void* dst, const void* src, size_t bytes) override {
    std::memmove(dst, src, bytes);
    return Status::Ok();
  }
  Status Synchronize() override { return Status::Ok(); }
  DType DefaultActivationType(GgmlType) const override { return DType::kF32; }
  bool SupportsActivationType(DType dtype) const override { return dtype == DType::kF32; }
  int64_t PreparedWeightBytes(const WeightView&, DType) const override { return 0; }
  StatusOr<WeightView> PrepareWeight(const WeightView& host, DType act) override {
    if (act != DType::kF32) return UnsupportedDType(name() + " backend", act);
    return host;
  }
  StatusOr<const float*> PrepareVector(const float* host, int64_t) override { return host; }
  Status Embedding(const EmbeddingParams& p) override { return embedding_ref(p); }
  Status Rope(const RopeParams& p) override { return rope_ref(p); }
  Status KvWrite(const KvWriteParams& p) override { return kv_write_ref(p); }
  Status RopeKvWrite(const RopeKvWriteParams& p) override { return rope_kv_write_ref(p); }
  Status Swiglu(const SwigluParams& p) override { return swiglu_ref(p); }
  Status Pool(const PoolParams& p) override { return pool_ref(p); }
  Status Add(const AddParams& p) override { return add_ref(p); }
  Status SoftCap(const SoftCapParams& p) override { return softcap_ref(p); }
  Status Route(const RouteParams& p) override { return route_ref(p); }
  Status ExpertSum(const ExpertSumParams& p) override { return expert_sum_ref(p); }
  Status GatherRows(const GatherRowsParams& p) override { return GatherRowsHost(p); }
  Status Sample(const SampleParams& p) override { return sample_ref(p); }
};

class CpuBackend : public HostBackendBase {
 public:
  std::string name() const override { return "cpu"; }
  Status RmsNorm(const RmsNormParams& p) override { return rmsnorm_cpu(p); }
  Status AddRmsNorm(const AddRmsNormParams& p) override { return add_rmsnorm_cpu(p); }
  Status LayerNorm(const LayerNormParams& p) override { return layernorm_cpu(p); }
  Status Matmul(const MatmulParams& p) override { return matmul_cpu(p); }
  Status Attention(const AttentionParams& p) override { return attention_cpu(p); }
};

class ReferenceBackend : public HostBackendBase {
 public:
  std::string name() const override { return "reference"; }
  Status RmsNorm(const RmsNormParams& p) override { return rmsnorm_ref(p); }
  Status AddRmsNorm(const AddRmsNormParams& p) override { return add_rmsnorm_ref(p); }
  Status LayerNorm(const LayerNormParams& p) override { return layernorm_ref(p); }
  Status Matmul(const MatmulParams& p) override { return matmul_ref(p); }
  Status Attention(const AttentionParams& p) override { return attention_ref(p); }
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend() { return std::make_unique<CpuBackend>(); }
std::unique_ptr<Backend> MakeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace forge
