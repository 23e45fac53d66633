// CreateBackend.
#include "runtime/backends.h"

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

}  // namespace forge
