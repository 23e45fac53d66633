// CreateBackend, CreateBackends and ParseByteSize.
#include "runtime/backends.h"

#include <cctype>
#include <cmath>
#include <string>

#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#endif

namespace forge {

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device) {
  if (device == "cpu") return MakeCpuBackend();
  if (device == "reference") return MakeReferenceBackend();
#ifdef FORGE_HAVE_CUDA
  if (device == "cuda") return MakeCudaBackend();
  if (device == "auto") return cuda::DeviceCount() > 0 ? MakeCudaBackend() : MakeCpuBackend();
#else
  if (device == "cuda") return UnavailableError("this build of Forge has no CUDA backend");
  if (device == "auto") return MakeCpuBackend();
#endif
  return InvalidArgumentError("unknown device '" + std::string(device) +
                              "' (expected auto, cpu, cuda or reference)");
}

std::vector<Backend*> BackendSet::ranks() const {
  std::vector<Backend*> r;
  for (const auto& b : backends) r.push_back(b.get());
  return r;
}

StatusOr<BackendSet> CreateBackends(std::string_view device, int n, int64_t memory_limit_bytes) {
  if (n < 1 || n > 64) {
    return InvalidArgumentError("--tensor-parallel " + std::to_string(n) +
                                ": expected 1 or more devices");
  }
  BackendSet set;
  bool gpu = device == "cuda";
#ifdef FORGE_HAVE_CUDA
  if (device == "auto") gpu = cuda::DeviceCount() > 0;
#endif
  if (!gpu) {
    if (memory_limit_bytes > 0) {
      return InvalidArgumentError("--gpu-memory-limit applies to GPU devices, not '" +
                                  std::string(device == "auto" ? "cpu" : device) + "'");
    }
    for (int r = 0; r < n; ++r) {
      ASSIGN_OR_RETURN(auto b, CreateBackend(device));
      set.backends.push_back(std::move(b));
    }
    if (n > 1) set.collective = MakeHostCollective(n);
    return set;
  }
#ifdef FORGE_HAVE_CUDA
  const int present = cuda::DeviceCount();
  if (present == 0) return UnavailableError(cuda::NoDeviceReason());
  if (n > present) {
    return InvalidArgumentError("--tensor-parallel " + std::to_string(n) + " needs " +
                                std::to_string(n) + " GPUs; " + std::to_string(present) +
                                " present");
  }
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(auto b, MakeCudaBackend(r, memory_limit_bytes));
    set.backends.push_back(std::move(b));
  }
  if (n > 1) {
    auto ranks = set.ranks();
    ASSIGN_OR_RETURN(set.collective, MakeNcclCollective(ranks));
  }
  return set;
#else
  return UnavailableError("this build of Forge has no CUDA backend");
#endif
}

StatusOr<int64_t> ParseByteSize(std::string_view text) {
  const std::string s(text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = s.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  double scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K") {
    scale = 1024.0;
  } else if (unit == "M") {
    scale = 1024.0 * 1024;
  } else if (unit == "G") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  }
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v * scale) || v * scale > 9.2e18) {
    return InvalidArgumentError("'" + s + "': expected a size such as 24GiB, 512M or 1073741824");
  }
  return static_cast<int64_t>(std::llround(v * scale));
}

}  // namespace forge
