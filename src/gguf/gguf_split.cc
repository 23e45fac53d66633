// Split models: file names (prefix-0000K-of-0000N.gguf), loading the sibling files of a first
// split into one GgufFile, and writing a model as split files.
#include "gguf/gguf_split.h"

#include <algorithm>
#include <cstdio>
#include <span>

#include "gguf/gguf_writer.h"

namespace forge {
namespace {

constexpr uint32_t kMaxSplits = 9999;

std::string FileName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The value, or its error prefixed with where it happened.
template <typename T>
StatusOr<T> In(StatusOr<T> v, const std::string& where) {
  if (!v.ok()) return v.status().WithContext(where);
  return v;
}

}  // namespace

Status GgufFile::LoadSplits(const GgufOpenOptions& options) {
  if (!Has(kGgufSplitCountKey) || !options.load_splits) return Status::Ok();
  ASSIGN_OR_RETURN(uint32_t count, In(GetU32(kGgufSplitCountKey), path_));
  ASSIGN_OR_RETURN(uint32_t no, In(GetU32Or(kGgufSplitNoKey, 0), path_));
  if (count == 0 || count > kMaxSplits || no >= count) {
    return DataLossError(path_ + ": split.no/split.count are " + std::to_string(no) + "/" +
                         std::to_string(count) + ", expected split.count 1 to " +
                         std::to_string(kMaxSplits) + " and split.no below it");
  }
  if (count == 1) return Status::Ok();
  if (no != 0) {
    return InvalidArgumentError(path_ + ": this is split " + std::to_string(no + 1) + " of " +
                                std::to_string(count) + " (split.no " + std::to_string(no) +
                                "); open the first split instead");
  }
  GgufSplitName name;
  if (!ParseGgufSplitName(path_, &name) || name.index != 1 ||
      name.count != static_cast<int>(count)) {
    return InvalidArgumentError(path_ + ": split.count is " + std::to_string(count) +
                                " but the file name does not end in " +
                                GgufSplitPath("", 1, static_cast<int>(count)));
  }
  for (uint32_t i = 1; i < count; ++i) {
    std::string path = GgufSplitPath(name.prefix, static_cast<int>(i) + 1, static_cast<int>(count));
    auto mapped = MappedFile::Open(path);
    if (!mapped.ok()) {
      return Status(mapped.status().code(),
                    "split " + std::to_string(i + 1) + " of " + std::to_string(count) + " of " +
                        FileName(path_) +
                        " is missing or unreadable: " + mapped.status().message());
    }
    // Parse the shard alone, check its split keys, then take its tensors.
    auto shard_or = OpenBuffer((*mapped)->data(), (*mapped)->size());
    if (!shard_or.ok()) return shard_or.status().WithContext(path);
    GgufFile& shard = **shard_or;
    ASSIGN_OR_RETURN(uint32_t shard_no, In(shard.GetU32(kGgufSplitNoKey), path));
    ASSIGN_OR_RETURN(uint32_t shard_count, In(shard.GetU32(kGgufSplitCountKey), path));
    if (shard_no != i || shard_count != count) {
      return DataLossError(path + ": split.no/split.count are " + std::to_string(shard_no) + "/" +
                           std::to_string(shard_count) + ", expected " + std::to_string(i) + "/" +
                           std::to_string(count) + " from its file name");
    }
    for (GgufTensorInfo& t : shard.tensors_) {
      if (tensor_index_.count(t.name)) {
        return DataLossError(path + ": tensor '" + t.name + "' is also in an earlier split");
      }
      t.shard = static_cast<int>(i);
      tensor_index_[t.name] = tensors_.size();
      tensors_.push_back(std::move(t));
    }
    files_.push_back(std::move(mapped).value());
    shard_paths_.push_back(path);
  }
  if (const GgufValue* n = Find(kGgufSplitTensorsCountKey)) {
    if (!GgufIsInteger(n->type()) || n->u64() != tensors_.size()) {
      return DataLossError(path_ + ": split.tensors.count is " + n->ToString() + " but the " +
                           std::to_string(count) + " files hold " +
                           std::to_string(tensors_.size()) + " tensors");
    }
  }
  return Status::Ok();
}

bool ParseGgufSplitName(const std::string& path, GgufSplitName* out) {
  // ...-NNNNN-of-MMMMM.gguf
  static constexpr size_t kSuffix = std::char_traits<char>::length("-00001-of-00002.gguf");
  if (path.size() < kSuffix) return false;
  std::string tail = path.substr(path.size() - kSuffix);
  int a = 0, b = 0;
  char rest[8] = {};
  if (std::sscanf(tail.c_str(), "-%5d-of-%5d%7s", &a, &b, rest) != 3) return false;
  if (std::string(rest) != ".gguf" || a < 1 || b < 1 || a > b) return false;
  if (GgufSplitPath("", a, b) != tail) return false;
  out->prefix = path.substr(0, path.size() - kSuffix);
  out->index = a;
  out->count = b;
  return true;
}

std::string GgufSplitPath(const std::string& prefix, int index, int count) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d.gguf", index, count);
  return prefix + buf;
}

StatusOr<std::vector<std::string>> WriteGgufSplits(const GgufFile& model, const std::string& prefix,
                                                   const GgufSplitOptions& options) {
  const int n = options.n_splits;
  if (n < 1 || n > static_cast<int>(kMaxSplits)) {
    return InvalidArgumentError("n_splits is " + std::to_string(n) + ", expected 1 to " +
                                std::to_string(kMaxSplits));
  }
  if (options.metadata_only_first && n < 2) {
    return InvalidArgumentError("metadata_only_first needs at least 2 splits");
  }
  const auto& tensors = model.tensors();
  const size_t n_tensors = tensors.size();
  // Tensor k goes to file first + k * span / n_tensors: in order, as even as it gets.
  const int first = options.metadata_only_first ? 1 : 0;
  const size_t span = static_cast<size_t>(n - first);
  std::vector<std::string> paths;
  for (int s = 0; s < n; ++s) {
    GgufWriter writer(model.version(), model.alignment());
    if (s == 0) {
      for (const auto& [key, value] : model.metadata()) {
        if (key.rfind("split.", 0) != 0) writer.Set(key, value);
      }
    }
    writer.Set(kGgufSplitNoKey, GgufValue::U16(static_cast<uint16_t>(s)));
    writer.Set(kGgufSplitCountKey, GgufValue::U16(static_cast<uint16_t>(n)));
    writer.Set(kGgufSplitTensorsCountKey, GgufValue::I32(static_cast<int32_t>(n_tensors)));
    std::vector<const GgufTensorInfo*> mine;
    for (size_t k = 0; k < n_tensors; ++k) {
      if (first + static_cast<int>(k * span / n_tensors) == s) mine.push_back(&tensors[k]);
    }
    for (const GgufTensorInfo* t : mine)
      RETURN_IF_ERROR(writer.AddTensor(t->name, t->type, t->dims));
    std::string path = GgufSplitPath(prefix, s + 1, n);
    RETURN_IF_ERROR(writer.Begin(path));
    for (size_t k = 0; k < mine.size(); ++k) {
      RETURN_IF_ERROR(writer.WriteTensorData(
          k, std::span<const uint8_t>(mine[k]->data, static_cast<size_t>(mine[k]->n_bytes))));
    }
    RETURN_IF_ERROR(writer.Finish());
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace forge
