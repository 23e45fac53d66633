// The CUDA matmul's variants as data, and the one rule that picks among them.
//
// Each variant declares where it runs (`why_not`: the first condition it does not meet, null
// where it runs the matmul), where the dispatch passes over it although it could run (`declines`:
// the measured reason, null where it is taken) and how it runs. The table lists them in the order
// the dispatch tries them; ChooseMatmul takes the first that runs the matmul and does not decline
// it. The rules read the matmul's shape, formats, strides and alignment only (no device call), so
// they are unit-tested on a machine without a GPU, and `forge inspect --plan` prints the choice
// for every weight of a model. docs/kernels.md gives the measurements behind each rule.
//
// MatmulPlanner keeps each choice per (weight, row bucket, layout): the choice is made once, when
// a step of that shape first runs (or a graph is recorded), not derived again on every call.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cuda/variant_table.h"
#include "base/status.h"

namespace forge::cuda {

// What a variant may use besides the matmul's own buffers.
struct MatmulResources {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* mma_workspace = nullptr;  // gemm_quant_mma's split-k workspace
  size_t mma_workspace_bytes = 0;
  void* dequant_scratch = nullptr;  // dequantize + cuBLAS: slabs of weight rows
  size_t dequant_scratch_bytes = 0;
};

struct MatmulVariant {
  const char* name;  // the kernel's entry point (docs/kernels.md names them the same)
  const char* (*why_not)(const MatmulParams& p, const MatmulResources& r);
  const char* (*declines)(const MatmulParams& p);  // null: never declines
  Status (*run)(const MatmulParams& p, const MatmulResources& r);
};

// Every variant, in the order the dispatch tries them: the block-format kernels, then the
// F32 / F16 / BF16 ones.
std::span<const MatmulVariant> MatmulVariants();
// The variant of that name, or null.
const MatmulVariant* FindMatmulVariant(std::string_view name);
// Whether the variant of that name runs p and does not decline it, with the backend's usual
// scratch sizes (the dispatch takes it there unless a variant before it does).
bool MatmulVariantTakes(std::string_view name, const MatmulParams& p);
// The backend's usual scratch sizes (dequantization 128 MiB, the MMA's workspace), no memory:
// for choosing without a backend (tests, forge inspect --plan).
MatmulResources UsualMatmulResources();

struct MatmulChoice {
  const MatmulVariant* variant = nullptr;  // null: no variant runs the matmul
  // The variants tried before it, each with why it was passed over ("does not run: ..." or
  // "declined: ...").
  PassedOver passed;
  std::string Explain() const { return ExplainChoice(variant ? variant->name : nullptr, passed); }
};

// The first variant that runs p and does not decline it. Requires p.m >= 1.
MatmulChoice ChooseMatmul(const MatmulParams& p, const MatmulResources& r);

// The rows buckets inside which no rule changes its answer: 1, 2-8, 9-16, 17-32, 33-64, 65-256,
// beyond (matmul_dispatch_test checks this for every m up to 1024). Returns the bucket's index.
int MatmulRowBucket(int64_t m);

// The choice kept per (weight, row bucket, types, strides, alignments, scratch size).
class MatmulPlanner {
 public:
  // The variant for p (Requires: p.m >= 1); InvalidArgument naming every variant's reason where
  // none runs it.
  StatusOr<const MatmulVariant*> Plan(const MatmulParams& p, const MatmulResources& r);
  size_t size() const { return plans_.size(); }

 private:
  struct Key {
    const void* w;
    int64_t rows, cols, row_bytes, x_stride, out_stride;
    size_t scratch;
    int type, x_type, out_type, bucket, align;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, const MatmulVariant*, KeyHash> plans_;
};

// The type a weight stored as `stored` has on the device for activations of type `act`: a block
// format stays as stored; anything else becomes `act` (CudaBackend::PrepareWeight).
GgmlType DeviceWeightType(GgmlType stored, DType act);

// A matmul of `w` at m rows laid out as the model lays them out (x and out 256-byte aligned,
// dense strides; with the activations' form where `with_form`), for listing the plan of a model
// on any machine: no memory is touched.
MatmulChoice ChooseMatmulForShape(const WeightView& w, int64_t m, DType x_type, DType out_type,
                                  bool with_form);

}  // namespace forge::cuda
