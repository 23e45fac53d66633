// Split models: writing a model as several GGUF files (name-0000K-of-0000N.gguf) with the
// split.* keys as llama.cpp's gguf-split writes them. Reading them back is GgufFile::Open.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"

namespace forge {

inline constexpr const char* kGgufSplitNoKey = "split.no";                       // u16, 0-based
inline constexpr const char* kGgufSplitCountKey = "split.count";                 // u16
inline constexpr const char* kGgufSplitTensorsCountKey = "split.tensors.count";  // i32

struct GgufSplitOptions {
  int n_splits = 2;  // 1 to 9999
  // Put only metadata in the first file (llama.cpp's --no-tensor-first-split).
  bool metadata_only_first = false;
};

// Writes `model` (every shard of it) as prefix-00001-of-0000N.gguf ... prefix-0000N-of-0000N.gguf:
// all metadata in the first file, tensors in table order spread evenly over the files, and in
// every file split.no, split.count and split.tensors.count. Returns the paths written.
StatusOr<std::vector<std::string>> WriteGgufSplits(const GgufFile& model, const std::string& prefix,
                                                   const GgufSplitOptions& options = {});

}  // namespace forge
