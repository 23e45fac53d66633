// Test files made from others: a GGUF file copied with keys set (added or replaced), a tensor
// left out, or tensors' bytes edited; for loading errors and variants of a real or synthetic model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_value.h"

namespace forge::testing {

using GgufKeys = std::vector<std::pair<std::string, GgufValue>>;
// Edits tensor `name`'s bytes in place.
using TensorEdit = std::function<void(const std::string& name, std::vector<uint8_t>& bytes)>;

// Writes src with `keys` set, without tensor `drop` (empty: none), each tensor passed through
// `edit` (empty: unchanged), to dst; returns dst. Failures are test failures.
std::string RewriteGguf(const std::string& src, const std::string& dst, const GgufKeys& keys,
                        const std::string& drop = "", const TensorEdit& edit = {});

}  // namespace forge::testing
