// CudaBackend: ops map to the *_cuda launchers; matmul is cuBLAS SGEMM with TF32 off.
#include <cublas_v2.h>

#include <vector>

#include "backend/cuda/add/add_cuda.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/ops_cuda.h"
#include "quant/dequantize.h"

namespace forge {
namespace {

class DeviceBuffer : public BackendBuffer {
 public:
  DeviceBuffer(void* p, size_t n) : p_(p), n_(n) {}
  ~DeviceBuffer() override { cudaFree(p_); }
  void* data() override { return p_; }
  size_t size() const override { return n_; }

 private:
  void* p_;
  size_t n_;
};

class CudaBackend : public Backend {
 public:
  ~CudaBackend() override {
    if (cublas_) cublasDestroy(cublas_);
  }
  Status Init(int device) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
    // F32 products stay F32 (no TF32): the validation path.
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
    return Status::Ok();
  }
  std::string name() const override { return "cuda"; }

  StatusOr<std::unique_ptr<BackendBuffer>> Alloc(size_t bytes) override {
    ASSIGN_OR_RETURN(void* p, cuda::DeviceAlloc(bytes == 0 ? 4 : bytes));
    return std::unique_ptr<BackendBuffer>(new DeviceBuffer(p, bytes));
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    return cuda::CopyToDevice(dst, src, bytes);
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    return cuda::CopyToHost(dst, src, bytes);
  }
  Status Synchronize() override { return cuda::DeviceSynchronize(); }

  StatusOr<WeightView> PrepareWeight(const WeightView& host) override {
    // Dequantize row by row to F32 and upload.
    const size_t bytes = static_cast<size_t>(host.rows * host.cols) * 4;
    ASSIGN_OR_RETURN(auto buf, Alloc(bytes));
    std::vector<float> rows;
    const int64_t chunk = std::max<int64_t>(1, (int64_t{64} << 20) / (host.cols * 4));
    for (int64_t r = 0; r < host.rows; r += chunk) {
      const int64_t n = std::min(chunk, host.rows - r);
      rows.resize(n * host.cols);
      for (int64_t i = 0; i < n; ++i) {
        RETURN_IF_ERROR(DequantizeRow(host.type, host.row(r + i), rows.data() + i * host.cols,
                                      host.cols));
      }
      RETURN_IF_ERROR(Upload(buf->f32() + r * host.cols, rows.data(), rows.size() * 4));
    }
    WeightView d{GgmlType::kF32, host.rows, host.cols, host.cols * 4,
                 static_cast<const uint8_t*>(buf->data())};
    owned_.push_back(std::move(buf));
    return d;
  }
  StatusOr<const float*> PrepareVector(const float* host, int64_t n) override {
    if (host == nullptr) return static_cast<const float*>(nullptr);
    ASSIGN_OR_RETURN(auto buf, Alloc(n * 4));
    RETURN_IF_ERROR(Upload(buf->data(), host, n * 4));
    const float* p = buf->f32();
    owned_.push_back(std::move(buf));
    return p;
  }

  Status Embedding(const EmbeddingParams& p) override { return cuda::embedding_cuda(p); }
  Status RmsNorm(const RmsNormParams& p) override { return cuda::rmsnorm_cuda(p); }
  Status Rope(const RopeParams& p) override { return cuda::rope_cuda(p); }
  Status KvWrite(const KvWriteParams& p) override { return cuda::kv_write_cuda(p); }
  Status Attention(const AttentionParams& p) override { return cuda::attention_cuda(p); }
  Status Swiglu(const SwigluParams& p) override { return cuda::swiglu_cuda(p); }
  Status Add(const AddParams& p) override { return cuda::add_cuda(p); }
  Status GatherRows(const GatherRowsParams& p) override { return cuda::gather_rows_cuda(p); }

  Status Matmul(const MatmulParams& p) override {
    if (p.w.type != GgmlType::kF32) {
      return UnimplementedError("cuda matmul: weight type " + std::string(TypeName(p.w.type)));
    }
    if (p.m == 0) return Status::Ok();
    const int64_t k = p.w.cols, n = p.w.rows;
    const int64_t xs = p.x_stride ? p.x_stride : k;
    const int64_t os = p.out_stride ? p.out_stride : n;
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major out[m, n] = x[m, k] W[n, k]^T is column-major out^T = W^T(k x n)^T x^T.
    CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                       static_cast<int>(p.m), static_cast<int>(k), &alpha,
                                       reinterpret_cast<const float*>(p.w.data),
                                       static_cast<int>(p.w.row_bytes / 4), p.x,
                                       static_cast<int>(xs), &beta, p.out, static_cast<int>(os)));
    if (p.bias != nullptr) return cuda::add_bias_cuda(p.out, p.bias, p.m, n, os);
    return Status::Ok();
  }

 private:
  cublasHandle_t cublas_ = nullptr;
  std::vector<std::unique_ptr<BackendBuffer>> owned_;  // prepared weights
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  if (cuda::DeviceCount() == 0) return UnavailableError(cuda::NoDeviceReason());
  auto b = std::make_unique<CudaBackend>();
  RETURN_IF_ERROR(b->Init(device));
  return std::unique_ptr<Backend>(std::move(b));
}

}  // namespace forge
