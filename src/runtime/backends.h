// Choosing a backend by name: "auto" (CUDA when a device is present, else CPU), "cpu", "cuda",
// "reference" (the ops' _ref twins; slow, for tests); and the backends of a tensor-parallel run.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/collective.h"

namespace forge {

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device);

// The backends of one model: one per tensor-parallel rank and, for more than one, the collective
// between them. Destroy models (and their graphs) before the set.
struct BackendSet {
  std::vector<std::unique_ptr<Backend>> backends;
  std::unique_ptr<Collective> collective;  // null for one rank
  std::vector<Backend*> ranks() const;
  Backend& first() const { return *backends[0]; }
};

// n ranks of `device`: CUDA devices 0 .. n-1 with NCCL between them (an error names the devices
// present when there are fewer), or n host backends ("cpu", "reference") with a host collective.
// "auto" is CUDA when a device is present. memory_limit_bytes > 0 caps each GPU's backend
// allocations (--gpu-memory-limit); an error on host backends.
StatusOr<BackendSet> CreateBackends(std::string_view device, int n, int64_t memory_limit_bytes = 0);

// "24GiB", "512M", "1.5G", "1073741824": binary units (K, M, G, T, with or without "iB"/"B").
StatusOr<int64_t> ParseByteSize(std::string_view text);

}  // namespace forge
