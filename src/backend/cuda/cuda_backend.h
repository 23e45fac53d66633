// The CUDA backend: device buffers, weights copied to the device at load (F16/BF16 weights as
// stored, other formats converted to the activation dtype), every op a kernel or a cuBLAS call
// on one stream, decode steps recordable as CUDA graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "backend/backend.h"
#include "backend/collective.h"

namespace forge {

// A backend on CUDA device `device`. Error (UNAVAILABLE) when no CUDA device is usable,
// INVALID_ARGUMENT for a device that does not exist. memory_limit_bytes > 0 caps the bytes the
// backend's Alloc hands out (its weights, caches and workspaces; not what cuBLAS or NCCL take
// for themselves): an Alloc past it fails with RESOURCE_EXHAUSTED, and MemoryInfo reports at
// most the limit as total and the limit less what is allocated as free.
StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0, int64_t memory_limit_bytes = 0);

// The collective of tensor-parallel ranks on CUDA devices, through NCCL: rank r is backends[r],
// whose stream runs (and whose graphs can record) its ops. Every backend must be a CUDA backend
// on a device of its own (else INVALID_ARGUMENT). NCCL is loaded at run time (dlopen): from
// $FORGE_NCCL_LIB alone when that is set, else libnccl.so.2 on the loader's path, the CUDA
// toolkit's lib folders and the nvidia-nccl-cu13 Python wheel; UNAVAILABLE, naming what was
// tried, when none loads. NVLink multicast (NVLS) is always disabled. The backends must outlive
// the collective, and every graph that recorded one of its ops must be destroyed before it
// (NCCL waits for those graphs when its communicators are destroyed or aborted).
StatusOr<std::unique_ptr<Collective>> MakeNcclCollective(std::span<Backend* const> backends);

}  // namespace forge
