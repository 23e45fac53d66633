// Choosing a backend by name: "auto" (CUDA when a device is present, else CPU), "cpu", "cuda",
// "reference" (the ops' _ref twins; slow, for tests).
#pragma once

#include <memory>
#include <string_view>

#include "backend/backend.h"

namespace forge {

StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view device);

}  // namespace forge
