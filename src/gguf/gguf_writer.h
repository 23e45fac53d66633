// GgufWriter: writes GGUF v3 (or v2) files. Metadata and the tensor table are declared first;
// tensor data is then streamed in table order, so a model larger than memory can be written.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "quant/type_table.h"

namespace forge {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3, uint32_t alignment = 32);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Sets (or replaces) a metadata key; keys keep the order of their first Set.
  void Set(const std::string& key, GgufValue value);
  // Declares a tensor; dims in GGUF order (dims[0] = row length). Its data follows in this order.
  Status AddTensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims);
  // Declares a tensor and keeps its bytes for WriteFile/WriteToBuffer.
  Status AddTensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims,
                   std::vector<uint8_t> data);
  size_t tensor_count() const { return tensors_.size(); }
  int64_t tensor_bytes(size_t index) const { return tensors_[index].n_bytes; }

  // Streaming: Begin writes everything before the data; WriteTensorData must then be called for
  // each tensor in declaration order with exactly its byte count; Finish closes the file.
  Status Begin(const std::string& path);
  Status WriteTensorData(size_t index, std::span<const uint8_t> bytes);
  Status Finish();

  // Writes a whole file (or an in-memory image) from tensors declared with their data.
  Status WriteFile(const std::string& path);
  StatusOr<std::vector<uint8_t>> WriteToBuffer();

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    int64_t n_bytes;
    uint64_t offset;
    std::vector<uint8_t> data;
    bool has_data;
  };
  std::vector<uint8_t> SerializeHead() const;

  uint32_t version_;
  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
  uint64_t data_size_ = 0;
  std::FILE* out_ = nullptr;
  std::string path_;
  size_t next_tensor_ = 0;
  uint64_t written_data_ = 0;
};

}  // namespace forge
