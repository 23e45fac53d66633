// CudaBackend: ops map to the *_cuda launchers on the backend's stream; matmuls are cuBLAS
// GEMMs with F32 accumulation (F16/BF16 on tensor cores, F32 without TF32 for validation).
// Weights in the ten block formats (Q4_0 .. Q6_K) stay in device memory as stored: a few
// activation rows go through the quantized GEMV, more through the fused quantized GEMM where it
// measured faster, else slabs of rows dequantized into a fixed scratch buffer and a cuBLAS GEMM;
// embedding rows are dequantized as they are gathered. Each backend drives one device: every
// public method first makes that device current on the calling thread (tensor-parallel ranks
// call from their own threads), and an optional memory limit caps what its Alloc hands out.
#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

#include "backend/cuda/add/add_cuda.h"
#include "backend/cuda/busy_timer.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/embedding/embedding_cuda.h"
#include "backend/cuda/device.h"
#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/dequantize_cuda.h"
#include "backend/cuda/matmul/gemm_quant_mma.h"
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/matmul/matmul_dispatch.h"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/sample/sample_cuda.h"
#include "base/thread_pool.h"
#include "quant/dequantize.h"

namespace forge {
namespace {

constexpr size_t kCublasWorkspace = 32 << 20;
// Dequantized weight slabs for matmuls of more rows than the quantized GEMVs take: 64 MiB from the
// start, grown up to 128 MiB as quantized weights are prepared, so that a 4096 x 14336 matrix
// (117 MB in F16) is one slab. Two 2048-row slabs, each with its own GEMM, measured 2.4x slower
// at 512 rows on the H200 (325 against 135 us, bench/results/gemv-slab-h200-2026-11-22-s8.txt).
constexpr size_t kDequantScratch = size_t{64} << 20;
constexpr size_t kDequantScratchMax = size_t{128} << 20;

// Weights kept in their stored blocks on the device (the quantized kernels read them as is).
bool KeptQuantized(GgmlType t) { return cuda::qd::IsQuantFormat(t); }

std::string Mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Makes `device` current for the rest of a method.
Status MakeCurrent(int device) { return CudaStatus(cuda::UseDevice(device), "cudaSetDevice"); }
// The same where no error can be returned (it is cleared, not left for a later launch check).
void MakeCurrentQuietly(int device) {
  if (cuda::UseDevice(device) != cudaSuccess) cudaGetLastError();
}

// A backend's device and the bytes its buffers hold (shared with the buffers, which may be
// freed from any thread, after the backend).
struct DeviceMemory {
  int device = 0;
  int64_t limit = 0;  // bytes; 0: none
  std::atomic<int64_t> allocated{0};
};

class DeviceBuffer : public BackendBuffer {
 public:
  DeviceBuffer(void* p, size_t n, size_t counted, std::shared_ptr<DeviceMemory> mem)
      : p_(p), n_(n), counted_(counted), mem_(std::move(mem)) {}
  ~DeviceBuffer() override {
    // Freed on its own device; the caller's current device is restored.
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1;
    if (current != mem_->device) cudaSetDevice(mem_->device);
    cudaFree(p_);
    if (current >= 0 && current != mem_->device) cudaSetDevice(current);
    mem_->allocated.fetch_sub(static_cast<int64_t>(counted_), std::memory_order_relaxed);
  }
  void* data() override { return p_; }
  size_t size() const override { return n_; }

 private:
  void* p_;
  size_t n_;
  size_t counted_;  // bytes counted against the backend's memory
  std::shared_ptr<DeviceMemory> mem_;
};

class CudaGraph : public BackendGraph {
 public:
  CudaGraph(cudaGraph_t g, cudaGraphExec_t e, cudaStream_t s, int device)
      : graph_(g), exec_(e), stream_(s), device_(device) {}
  ~CudaGraph() override {
    MakeCurrentQuietly(device_);
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  Status Replay() override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream_));
    return Status::Ok();
  }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  int device_;
};

// The activation dtype a weight stored as `t` can be used in without conversion.
bool NativeHalf(GgmlType t, DType* as) {
  if (t == GgmlType::kF16)
    *as = DType::kF16;
  else if (t == GgmlType::kBF16)
    *as = DType::kBF16;
  else
    return false;
  return true;
}

class CudaBackend : public Backend {
 public:
  ~CudaBackend() override {
    MakeCurrentQuietly(device_);
    owned_.clear();
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  Status Init(int device, int64_t memory_limit) {
    device_ = device;
    mem_->device = device;
    mem_->limit = memory_limit;
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    // A blocking stream: ordered with the legacy default stream that plain cudaMemcpy uses.
    CUDA_RETURN_IF_ERROR(cudaStreamCreate(&stream_));
    CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
    CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, stream_));
    // A fixed workspace so that cuBLAS allocates nothing while a graph is recorded.
    ASSIGN_OR_RETURN(cublas_ws_, Alloc(kCublasWorkspace));
    CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(cublas_, cublas_ws_->data(), kCublasWorkspace));
    ASSIGN_OR_RETURN(attn_ws_, Alloc(cuda::kAttentionWorkspaceBytes));  // split-KV decode partials
    // Zero once: the decode kernel's merge counters start at zero and every call leaves them so.
    CUDA_RETURN_IF_ERROR(cudaMemset(attn_ws_->data(), 0, attn_ws_->size()));
    // The quantized matmul's global k splits; its counters likewise start at zero.
    ASSIGN_OR_RETURN(mma_ws_, Alloc(cuda::kGemmQuantMmaWorkspaceBytes));
    CUDA_RETURN_IF_ERROR(cudaMemset(mma_ws_->data(), 0, mma_ws_->size()));
    ASSIGN_OR_RETURN(dq_ws_, Alloc(kDequantScratch));
    return Status::Ok();
  }
  std::string name() const override { return "cuda"; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

  StatusOr<std::unique_ptr<BackendBuffer>> Alloc(size_t bytes) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    const size_t n = bytes == 0 ? 4 : bytes;
    const int64_t want = static_cast<int64_t>(n);
    if (mem_->limit > 0) {  // reserve the bytes under the limit before allocating
      int64_t used = mem_->allocated.load(std::memory_order_relaxed);
      do {
        if (want > mem_->limit - used) {
          return ResourceExhaustedError(Where() + Mib(want) + " requested, " + Mib(used) +
                                        " of the --gpu-memory-limit of " + Mib(mem_->limit) +
                                        " in use");
        }
      } while (!mem_->allocated.compare_exchange_weak(used, used + want));
    } else {
      mem_->allocated.fetch_add(want, std::memory_order_relaxed);
    }
    StatusOr<void*> p = cuda::DeviceAlloc(n);
    if (!p.ok()) {
      mem_->allocated.fetch_sub(want, std::memory_order_relaxed);
      return p.status().WithContext("cuda:" + std::to_string(device_));
    }
    return std::unique_ptr<BackendBuffer>(new DeviceBuffer(*p, bytes, n, mem_));
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    // From pageable memory this returns once `src` has been staged: the caller may reuse it.
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    return Status::Ok();
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }
  Status Copy(void* dst, const void* src, size_t bytes) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
    return Status::Ok();
  }
  Status Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                size_t rows) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    if (width == 0 || rows == 0) return Status::Ok();
    CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                                           cudaMemcpyDeviceToDevice, stream_));
    return Status::Ok();
  }
  Status Synchronize() override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }
  // The device's free and total memory; under a limit L, at most L and L - allocated.
  void MemoryInfo(int64_t* free_bytes, int64_t* total_bytes) override {
    size_t f = 0, t = 0;
    MakeCurrentQuietly(device_);
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) cudaGetLastError();
    *free_bytes = static_cast<int64_t>(f);
    *total_bytes = static_cast<int64_t>(t);
    if (mem_->limit > 0) {
      const int64_t used = mem_->allocated.load(std::memory_order_relaxed);
      *total_bytes = std::min(*total_bytes, mem_->limit);
      *free_bytes = std::min(*free_bytes, std::max<int64_t>(0, mem_->limit - used));
    }
  }
  // Busy time from CUDA events around the marked work on the stream (busy_timer.h).
  void MarkBusyBegin() override {
    MakeCurrentQuietly(device_);
    busy_.Begin(stream_);
  }
  void MarkBusyEnd() override {
    MakeCurrentQuietly(device_);
    busy_.End(stream_);
  }
  double BusySeconds() override {
    MakeCurrentQuietly(device_);
    return busy_.Seconds();
  }

  DType DefaultActivationType(GgmlType weight_type) const override {
    return weight_type == GgmlType::kBF16 ? DType::kBF16 : DType::kF16;
  }
  bool SupportsActivationType(DType) const override { return true; }

  bool SupportsGraphs() const override { return true; }
  Status BeginCapture() override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    return Status::Ok();
  }
  StatusOr<std::unique_ptr<BackendGraph>> EndCapture() override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    cudaGraph_t graph = nullptr;
    CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess) {
      cudaGraphDestroy(graph);
      return CudaStatus(err, "cudaGraphInstantiate");
    }
    return std::unique_ptr<BackendGraph>(new CudaGraph(graph, exec, stream_, device_));
  }

  int64_t PreparedWeightBytes(const WeightView& host, DType act) const override {
    if (KeptQuantized(host.type)) return host.rows * host.row_bytes;
    return host.rows * host.cols * static_cast<int64_t>(DTypeSize(act));
  }

  StatusOr<WeightView> PrepareWeight(const WeightView& host, DType act) override {
    return PrepareStacked({host}, act);
  }
  bool StacksWeights() const override { return true; }
  StatusOr<WeightView> PrepareStacked(const std::vector<WeightView>& parts, DType act) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    const int64_t es = static_cast<int64_t>(DTypeSize(act));
    int64_t rows = 0;
    for (const WeightView& w : parts) {
      if (w.cols != parts[0].cols) {
        return InvalidArgumentError("stacked weights: " + std::to_string(w.cols) + " columns, " +
                                    "expected " + std::to_string(parts[0].cols));
      }
      rows += w.rows;
    }
    const int64_t cols = parts[0].cols;
    if (KeptQuantized(parts[0].type)) {
      GrowDequantScratch(rows * cols * es);
      return UploadStored(parts, rows);
    }
    ASSIGN_OR_RETURN(auto buf, Alloc(static_cast<size_t>(rows * cols * es)));
    char* dst = static_cast<char*>(buf->data());
    for (const WeightView& w : parts) {
      RETURN_IF_ERROR(PrepareInto(w, act, dst));
      dst += w.rows * cols * es;
    }
    const GgmlType type = act == DType::kF32   ? GgmlType::kF32
                          : act == DType::kF16 ? GgmlType::kF16
                                               : GgmlType::kBF16;
    WeightView d{type, rows, cols, cols * es, static_cast<const uint8_t*>(buf->data())};
    owned_.push_back(std::move(buf));
    return d;
  }

  // The dequantization scratch toward min(bytes, kDequantScratchMax); where the larger buffer
  // does not fit, the smaller one stays (the matmuls then take more slabs: slower, not wrong).
  void GrowDequantScratch(int64_t bytes) {
    const size_t want = std::min(static_cast<size_t>(bytes), kDequantScratchMax);
    if (dq_ws_ != nullptr && dq_ws_->size() >= want) return;
    auto bigger = Alloc(want);
    if (bigger.ok()) dq_ws_ = std::move(*bigger);
  }

  // Quantized weights as stored, parts stacked by rows (all of one type and row length).
  StatusOr<WeightView> UploadStored(const std::vector<WeightView>& parts, int64_t rows) {
    const WeightView& first = parts[0];
    for (const WeightView& w : parts) {
      if (w.type != first.type || w.row_bytes != first.row_bytes) {
        return InvalidArgumentError("stacked weights: " + std::string(TypeName(w.type)) + " with " +
                                    std::string(TypeName(first.type)));
      }
    }
    ASSIGN_OR_RETURN(auto buf, Alloc(static_cast<size_t>(rows * first.row_bytes)));
    char* dst = static_cast<char*>(buf->data());
    for (const WeightView& w : parts) {
      RETURN_IF_ERROR(Upload(dst, w.data, static_cast<size_t>(w.bytes())));
      dst += w.bytes();
    }
    RETURN_IF_ERROR(Synchronize());  // the host views may be unmapped after the load
    WeightView d = first;
    d.rows = rows;
    d.data = static_cast<const uint8_t*>(buf->data());
    owned_.push_back(std::move(buf));
    return d;
  }

  // Writes `host` converted to `act` (or as stored when it already is) at device address dst.
  Status PrepareInto(const WeightView& host, DType act, char* dst) {
    const int64_t es = static_cast<int64_t>(DTypeSize(act));
    DType native;
    if (NativeHalf(host.type, &native) && native == act && host.row_bytes == host.cols * es) {
      RETURN_IF_ERROR(Upload(dst, host.data, host.rows * host.row_bytes));  // as stored
    } else {
      // Dequantize chunks of rows to F32 on the host (in parallel), convert on the device.
      const int64_t chunk = std::max<int64_t>(1, (int64_t{64} << 20) / (host.cols * 4));
      std::vector<float> rows;
      std::unique_ptr<BackendBuffer> staging;
      if (act != DType::kF32) {
        ASSIGN_OR_RETURN(staging,
                         Alloc(static_cast<size_t>(std::min(chunk, host.rows) * host.cols * 4)));
      }
      for (int64_t r = 0; r < host.rows; r += chunk) {
        const int64_t n = std::min(chunk, host.rows - r);
        rows.resize(n * host.cols);
        Status st = Status::Ok();
        std::mutex mu;
        ThreadPool::Global().ParallelFor(
            n,
            [&](int64_t b, int64_t e) {
              for (int64_t i = b; i < e; ++i) {
                Status s = DequantizeRow(host.type, host.row(r + i), rows.data() + i * host.cols,
                                         host.cols);
                if (!s.ok()) {
                  std::lock_guard<std::mutex> lock(mu);
                  st = s;
                }
              }
            },
            16);
        RETURN_IF_ERROR(st);
        char* out = dst + r * host.cols * es;
        if (act == DType::kF32) {
          RETURN_IF_ERROR(Upload(out, rows.data(), rows.size() * 4));
        } else {
          RETURN_IF_ERROR(Upload(staging->data(), rows.data(), rows.size() * 4));
          RETURN_IF_ERROR(cuda::convert_f32_cuda(staging->f32(), out, act,
                                                 static_cast<int64_t>(rows.size()), stream_));
        }
      }
      RETURN_IF_ERROR(Synchronize());  // the staging buffer is freed on return
    }
    return Status::Ok();
  }
  StatusOr<const float*> PrepareVector(const float* host, int64_t n) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    if (host == nullptr) return static_cast<const float*>(nullptr);
    ASSIGN_OR_RETURN(auto buf, Alloc(n * 4));
    RETURN_IF_ERROR(Upload(buf->data(), host, n * 4));
    const float* p = buf->f32();
    owned_.push_back(std::move(buf));
    return p;
  }

  Status Embedding(const EmbeddingParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    if (KeptQuantized(p.table.type)) {
      RETURN_IF_ERROR(cuda::dequantize_gather_rows_cuda(p.table.data, p.table.type, p.table.cols,
                                                        p.table.rows, p.ids, p.n_tokens, p.out,
                                                        DType::kF32, stream_, p.row_offset,
                                                        p.n_vocab));
      if (p.scale == 1.0f) return Status::Ok();
      return cuda::scale_f32_cuda(p.out, p.n_tokens * p.table.cols, p.scale, stream_);
    }
    return cuda::embedding_cuda(p, stream_);
  }
  Status RmsNorm(const RmsNormParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::rmsnorm_cuda(p, stream_);
  }
  Status AddRmsNorm(const AddRmsNormParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::add_rmsnorm_cuda(p, stream_);
  }
  Status LayerNorm(const LayerNormParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::layernorm_cuda(p, stream_);
  }
  Status Pool(const PoolParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::pool_cuda(p, stream_);
  }
  Status Rope(const RopeParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::rope_cuda(p, stream_);
  }
  Status KvWrite(const KvWriteParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::kv_write_cuda(p, stream_);
  }
  Status RopeKvWrite(const RopeKvWriteParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::rope_kv_write_cuda(p, stream_);
  }
  Status Attention(const AttentionParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::attention_cuda(p, stream_, attn_ws_->data(), attn_ws_->size());
  }
  Status Swiglu(const SwigluParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::swiglu_cuda(p, stream_);
  }
  Status Add(const AddParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::add_cuda(p, stream_);
  }
  Status SoftCap(const SoftCapParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::softcap_cuda(p, stream_);
  }
  Status Route(const RouteParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::route_cuda(p, stream_);
  }
  Status ExpertSum(const ExpertSumParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::expert_sum_cuda(p, stream_);
  }
  Status GatherRows(const GatherRowsParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::gather_rows_cuda(p, stream_);
  }
  Status Sample(const SampleParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    return cuda::sample_cuda(p, stream_);
  }

  int64_t QuantizedActivationBytes(const WeightView& w, int64_t m, DType x_type,
                                   DType out_type) const override {
    return KeptQuantized(w.type) ? cuda::GemvQuantDp4aActivationBytes(w, m, x_type, out_type) : 0;
  }
  Status Matmul(const MatmulParams& p) override {
    RETURN_IF_ERROR(MakeCurrent(device_));
    if (!KeptQuantized(p.w.type)) {
      DType wt;
      if (p.w.type == GgmlType::kF32) {
        wt = DType::kF32;
      } else if (!NativeHalf(p.w.type, &wt)) {
        return UnimplementedError("cuda matmul: weight type " + std::string(TypeName(p.w.type)) +
                                  " (weights are prepared as F32, F16 or BF16)");
      }
      if (p.x_type != wt) {
        return InvalidArgumentError(std::string("cuda matmul: activations ") +
                                    DTypeName(p.x_type) + " with " +
                                    std::string(TypeName(p.w.type)) + " weights");
      }
      if (p.out_type != wt && p.out_type != DType::kF32) {
        return InvalidArgumentError(std::string("cuda matmul: output ") + DTypeName(p.out_type) +
                                    " from " + DTypeName(p.x_type) + " inputs");
      }
    }
    if (p.m == 0) return Status::Ok();
    // The variant is chosen once per weight, row bucket and layout (matmul/matmul_dispatch.h).
    ASSIGN_OR_RETURN(const cuda::MatmulVariant* v, planner_.Plan(p, matmul_resources()));
    return v->run(p, matmul_resources());
  }
  cuda::MatmulResources matmul_resources() const {
    return {stream_, cublas_, mma_ws_->data(), mma_ws_->size(), dq_ws_->data(), dq_ws_->size()};
  }
  std::pair<void*, size_t> attention_workspace() const {
    return {attn_ws_->data(), attn_ws_->size()};
  }

 private:
  std::string Where() const { return "cuda:" + std::to_string(device_) + ": "; }

  int device_ = 0;
  std::shared_ptr<DeviceMemory> mem_ = std::make_shared<DeviceMemory>();
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<BackendBuffer> cublas_ws_;
  std::unique_ptr<BackendBuffer> attn_ws_;
  std::unique_ptr<BackendBuffer> mma_ws_;
  std::unique_ptr<BackendBuffer> dq_ws_;               // kDequantScratch .. kDequantScratchMax
  std::vector<std::unique_ptr<BackendBuffer>> owned_;  // prepared weights
  cuda::BusyTimer busy_;
  cuda::MatmulPlanner planner_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device, int64_t memory_limit_bytes) {
  const int n = cuda::DeviceCount();
  if (n == 0) return UnavailableError(cuda::NoDeviceReason());
  if (device < 0 || device >= n) {
    return InvalidArgumentError("cuda:" + std::to_string(device) + ": no such device (" +
                                std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") + ")");
  }
  if (memory_limit_bytes < 0) {
    return InvalidArgumentError("cuda: negative memory limit " +
                                std::to_string(memory_limit_bytes));
  }
  auto b = std::make_unique<CudaBackend>();
  RETURN_IF_ERROR(b->Init(device, memory_limit_bytes));
  return std::unique_ptr<Backend>(std::move(b));
}

namespace cuda {

cudaStream_t CudaStreamOf(Backend& backend) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  return b != nullptr ? b->stream() : nullptr;
}

int CudaDeviceOf(Backend& backend) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  return b != nullptr ? b->device() : -1;
}

MatmulResources MatmulResourcesOf(Backend& backend) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  return b != nullptr ? b->matmul_resources() : MatmulResources{};
}

std::pair<void*, size_t> AttentionWorkspaceOf(Backend& backend) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  return b != nullptr ? b->attention_workspace() : std::pair<void*, size_t>{nullptr, 0};
}

}  // namespace cuda

}  // namespace forge
