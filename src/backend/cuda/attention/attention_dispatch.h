// The CUDA attention's variants as data, and the rule that picks among them (the matmul's shape:
// matmul/matmul_dispatch.h). Each variant declares where it runs (`why_not`: the first condition
// it does not meet, null where it runs the batch) and how it runs; the table lists them in the
// order the dispatch tries them, and ChooseAttention takes the first that runs the batch. The
// rules read what the host knows (token and sequence counts, dtypes, head counts and dim; the
// sequences' lengths stay on the device), so they are unit-tested without a GPU.
// docs/kernels.md gives the measurements behind the order.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/variant_table.h"

namespace forge::cuda {

// What a variant may use besides the batch's own buffers.
struct AttentionResources {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;  // split-KV decode partials (zero before the first call)
  size_t workspace_bytes = 0;
};

struct AttentionVariant {
  const char* name;  // the kernel's entry point
  const char* (*why_not)(const AttentionParams& p);
  Status (*run)(const AttentionParams& p, const AttentionResources& r);
};

// Every variant, in the order the dispatch tries them.
std::span<const AttentionVariant> AttentionVariants();
// The variant of that name, or null.
const AttentionVariant* FindAttentionVariant(std::string_view name);

struct AttentionChoice {
  const AttentionVariant* variant = nullptr;  // null: no variant runs the batch
  PassedOver passed;  // (variant, why not), in order
  std::string Explain() const { return ExplainChoice(variant ? variant->name : nullptr, passed); }
};

// The first variant that runs p (p.out_q aside: attention_cuda forms that row).
AttentionChoice ChooseAttention(const AttentionParams& p);

// The generic kernel: any head dim up to 256, F32 / F16 / BF16, causal or not; one warp per
// (query token, head). Correct for every shape, not fast.
Status attention_generic_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace forge::cuda
