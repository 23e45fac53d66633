// Copy-on-write of KV blocks: block dst gets block src's K and V in every layer.
// Written over Backend::Copy: a memcpy on the CPU, device-to-device copies queued on the GPU's
// stream before the step that reads them.
#pragma once

#include <span>

#include "backend/backend.h"
#include "runtime/kv_cache.h"
#include "sched/step_plan.h"

namespace forge {

// Requires: every id in [0, cache.shape().num_blocks). `backend` holds rank `rank`'s pools
// (tensor parallelism: call once per rank).
Status CopyKvBlocks(Backend& backend, KvCache& cache, std::span<const BlockCopy> copies,
                    int rank = 0);

}  // namespace forge
