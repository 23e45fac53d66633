// GgufFile: a GGUF v2/v3 model opened by mmap, with its metadata and tensor table; a model split
// over several files (name-0000K-of-0000N.gguf) opens as one. Every count, length and offset is
// checked against the bytes in the file before use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "gguf/gguf_value.h"
#include "quant/type_table.h"

namespace forge {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the row length (contiguous)
  GgmlType type = GgmlType::kF32;
  int64_t n_elements = 0;
  int64_t n_bytes = 0;
  uint64_t offset = 0;            // relative to the data section of its file
  uint64_t file_offset = 0;       // absolute, from the start of its file
  int shard = 0;                  // which file of a split model holds it
  const uint8_t* data = nullptr;  // into the mapping; valid while the GgufFile lives
  int64_t rows() const { return dims.empty() ? 0 : n_elements / dims[0]; }
  std::string ShapeString() const;  // "[64, 512]"
};

struct GgufOpenOptions {
  // Open the sibling files of a split model and merge them (default). When false, a shard
  // opens alone, as it is on disk.
  bool load_splits = true;
};

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path,
                                                  const GgufOpenOptions& options = {});
  // Parses a GGUF image in memory (not copied; it must outlive the result). Used by the fuzzer.
  static StatusOr<std::unique_ptr<GgufFile>> OpenBuffer(const uint8_t* data, size_t size);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& path() const { return path_; }
  int shard_count() const { return static_cast<int>(shard_paths_.size()); }
  const std::vector<std::string>& shard_paths() const { return shard_paths_; }

  // Metadata, in file order of the first shard.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;
  bool Has(const std::string& key) const { return Find(key) != nullptr; }

  // Typed accessors. Integers convert between widths when the value fits; floats accept f32/f64.
  StatusOr<uint64_t> GetU64(const std::string& key) const;
  StatusOr<int64_t> GetI64(const std::string& key) const;
  StatusOr<uint32_t> GetU32(const std::string& key) const;
  StatusOr<int32_t> GetI32(const std::string& key) const;
  StatusOr<float> GetF32(const std::string& key) const;
  StatusOr<bool> GetBool(const std::string& key) const;
  StatusOr<std::string> GetString(const std::string& key) const;
  StatusOr<std::vector<std::string>> GetStringArray(const std::string& key) const;
  StatusOr<std::vector<float>> GetF32Array(const std::string& key) const;
  StatusOr<std::vector<int32_t>> GetI32Array(const std::string& key) const;
  // With a default when the key is absent (an error still when present with a wrong type).
  StatusOr<uint32_t> GetU32Or(const std::string& key, uint32_t def) const;
  StatusOr<float> GetF32Or(const std::string& key, float def) const;
  StatusOr<bool> GetBoolOr(const std::string& key, bool def) const;
  StatusOr<std::string> GetStringOr(const std::string& key, const std::string& def) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(const std::string& name) const;
  // Bytes of all tensor data (every shard).
  int64_t TotalTensorBytes() const;

 private:
  GgufFile() = default;
  Status AddShard(std::unique_ptr<MappedFile> file, const uint8_t* data, size_t size, int shard);
  Status LoadSplits(const GgufOpenOptions& options);

  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::string> shard_paths_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// "dir/model-00002-of-00005.gguf" -> {"dir/model", 2, 5}; false when the name has no such suffix.
struct GgufSplitName {
  std::string prefix;
  int index = 0;  // 1-based
  int count = 0;
};
bool ParseGgufSplitName(const std::string& path, GgufSplitName* out);
std::string GgufSplitPath(const std::string& prefix, int index, int count);

}  // namespace forge
