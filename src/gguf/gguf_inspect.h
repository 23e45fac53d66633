// What `forge inspect` shows of a GGUF file: a readable summary, and tensor values as F32.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace forge {

struct InspectOptions {
  bool show_tensors = true;    // the tensor table
  bool show_metadata = false;  // every metadata key (long vocab arrays abbreviated)
};

// Architecture, dimensions, vocab and tokenizer kind, chat template presence, tensors, bytes by
// type.
std::string DescribeGguf(const GgufFile& file, const InspectOptions& options = {});

// The first n values of a tensor (flat, in storage order), dequantized to F32.
StatusOr<std::vector<float>> ReadTensorValues(const GgufFile& file, const std::string& name,
                                              int64_t n);

}  // namespace forge
