// Copy-on-write of KV blocks: block dst gets block src's K and V in every layer.
// Written over Backend::Download/Upload (a memcpy on the CPU); a GPU backend should give it a
// device-to-device batched copy (a Backend::CopyBlocks; the copies of a plan are independent).
#pragma once

#include <span>

#include "backend/backend.h"
#include "runtime/kv_cache.h"
#include "sched/step_plan.h"

namespace forge {

// Requires: every id in [0, cache.shape().num_blocks).
Status CopyKvBlocks(Backend& backend, KvCache& cache, std::span<const BlockCopy> copies);

}  // namespace forge
