// The GGUF parser: header, metadata, tensor table and data section, checked against the bytes
// actually present so that a corrupt or hostile file is an error, never a crash or a huge
// allocation; and the merging of split models.
#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

namespace forge {
namespace {

constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;

// Bounds-checked little-endian cursor over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (left() < sizeof(T)) return Truncated(what, sizeof(T));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status ReadString(std::string* out, const char* what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(Read(&len, what));
    if (len > left() || len > kMaxStringBytes) {
      return DataLossError(std::string(what) + ": string length " + std::to_string(len) +
                           " exceeds the " + std::to_string(left()) + " bytes left in the file");
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }
  Status Truncated(const char* what, size_t need) const {
    return DataLossError(std::string("truncated file: ") + what + " needs " +
                         std::to_string(need) + " bytes at offset " + std::to_string(pos_) +
                         ", " + std::to_string(left()) + " left");
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

Status ReadValue(Cursor& c, GgufType type, int depth, const std::string& key, GgufValue* out);

Status ReadArray(Cursor& c, int depth, const std::string& key, GgufValue* out) {
  if (depth >= kMaxArrayDepth) {
    return DataLossError(key + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  }
  uint32_t elem_raw = 0;
  uint64_t count = 0;
  RETURN_IF_ERROR(c.Read(&elem_raw, "array element type"));
  if (elem_raw >= kGgufTypeCount) {
    return DataLossError(key + ": unknown array element type " + std::to_string(elem_raw));
  }
  RETURN_IF_ERROR(c.Read(&count, "array length"));
  GgufType elem = static_cast<GgufType>(elem_raw);
  // The smallest encoding of one element: its scalar size, or a length/header for strings/arrays.
  size_t min_elem = GgufScalarSize(elem);
  if (elem == GgufType::kString) min_elem = 8;
  if (elem == GgufType::kArray) min_elem = 12;
  if (count > c.left() / min_elem) {
    return DataLossError(key + ": array of " + std::to_string(count) + " " +
                         std::string(GgufTypeName(elem)) + " cannot fit in the " +
                         std::to_string(c.left()) + " bytes left in the file");
  }
  std::vector<GgufValue> items(count);
  for (uint64_t i = 0; i < count; ++i) {
    RETURN_IF_ERROR(ReadValue(c, elem, depth + 1, key, &items[i]));
  }
  *out = GgufValue::Array(elem, std::move(items));
  return Status::Ok();
}

template <typename T, typename Make>
Status ReadScalar(Cursor& c, const char* what, Make make, GgufValue* out) {
  T v{};
  RETURN_IF_ERROR(c.Read(&v, what));
  *out = make(v);
  return Status::Ok();
}

Status ReadValue(Cursor& c, GgufType type, int depth, const std::string& key, GgufValue* out) {
  switch (type) {
    case GgufType::kU8: return ReadScalar<uint8_t>(c, "u8 value", GgufValue::U8, out);
    case GgufType::kI8: return ReadScalar<int8_t>(c, "i8 value", GgufValue::I8, out);
    case GgufType::kU16: return ReadScalar<uint16_t>(c, "u16 value", GgufValue::U16, out);
    case GgufType::kI16: return ReadScalar<int16_t>(c, "i16 value", GgufValue::I16, out);
    case GgufType::kU32: return ReadScalar<uint32_t>(c, "u32 value", GgufValue::U32, out);
    case GgufType::kI32: return ReadScalar<int32_t>(c, "i32 value", GgufValue::I32, out);
    case GgufType::kU64: return ReadScalar<uint64_t>(c, "u64 value", GgufValue::U64, out);
    case GgufType::kI64: return ReadScalar<int64_t>(c, "i64 value", GgufValue::I64, out);
    case GgufType::kF32: return ReadScalar<float>(c, "f32 value", GgufValue::F32, out);
    case GgufType::kF64: return ReadScalar<double>(c, "f64 value", GgufValue::F64, out);
    case GgufType::kBool: {
      uint8_t v = 0;
      RETURN_IF_ERROR(c.Read(&v, "bool value"));
      if (v > 1) {
        return DataLossError(key + ": bool value " + std::to_string(int{v}) + " is not 0 or 1");
      }
      *out = GgufValue::Bool(v != 0);
      return Status::Ok();
    }
    case GgufType::kString: {
      std::string s;
      RETURN_IF_ERROR(c.ReadString(&s, "string value"));
      *out = GgufValue::String(std::move(s));
      return Status::Ok();
    }
    case GgufType::kArray: return ReadArray(c, depth, key, out);
  }
  return DataLossError(key + ": unknown value type");
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::string GgufTensorInfo::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path,
                                                   const GgufOpenOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  const uint8_t* data = mapped->data();
  size_t size = mapped->size();
  RETURN_IF_ERROR(file->AddShard(std::move(mapped), data, size, 0).WithContext(path));
  file->shard_paths_.push_back(path);
  RETURN_IF_ERROR(file->LoadSplits(options));
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::OpenBuffer(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = "<memory>";
  RETURN_IF_ERROR(file->AddShard(nullptr, data, size, 0));
  file->shard_paths_.push_back(file->path_);
  return file;
}

Status GgufFile::AddShard(std::unique_ptr<MappedFile> mapped, const uint8_t* data, size_t size,
                          int shard) {
  Cursor c(data, size);
  uint32_t magic = 0, version = 0;
  RETURN_IF_ERROR(c.Read(&magic, "magic"));
  if (magic != kGgufMagic) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "not a GGUF file: magic 0x%08x, expected 0x%08x (\"GGUF\")",
                  magic, kGgufMagic);
    return InvalidArgumentError(buf);
  }
  RETURN_IF_ERROR(c.Read(&version, "version"));
  if (version != 2 && version != 3) {
    if (version == 1) return UnimplementedError("GGUF version 1 is not supported (expected 2 or 3)");
    if ((version & 0xffff) == 0 && (version >> 16) <= 3) {
      return UnimplementedError("big-endian GGUF files are not supported");
    }
    return UnimplementedError("unsupported GGUF version " + std::to_string(version) +
                              " (expected 2 or 3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  RETURN_IF_ERROR(c.Read(&n_kv, "metadata count"));
  // A key/value needs at least 8 (key length) + 4 (type) + 1 bytes; a tensor info 8+4+4+8.
  if (n_kv > c.left() / 13) {
    return DataLossError("metadata count " + std::to_string(n_kv) + " cannot fit in the " +
                         std::to_string(c.left()) + " bytes of the file");
  }
  if (n_tensors > c.left() / 24) {
    return DataLossError("tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                         std::to_string(c.left()) + " bytes of the file");
  }

  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::map<std::string, size_t> index;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    RETURN_IF_ERROR(c.ReadString(&key, "metadata key"));
    if (key.empty()) return DataLossError("metadata key " + std::to_string(i) + " is empty");
    if (index.count(key)) return DataLossError("duplicate metadata key '" + key + "'");
    uint32_t type_raw = 0;
    RETURN_IF_ERROR(c.Read(&type_raw, "metadata value type"));
    if (type_raw >= kGgufTypeCount) {
      return DataLossError(key + ": unknown metadata value type " + std::to_string(type_raw));
    }
    GgufValue value;
    RETURN_IF_ERROR(ReadValue(c, static_cast<GgufType>(type_raw), 0, key, &value));
    index[key] = metadata.size();
    metadata.emplace_back(std::move(key), std::move(value));
  }

  uint32_t alignment = kGgufDefaultAlignment;
  if (auto it = index.find("general.alignment"); it != index.end()) {
    const GgufValue& v = metadata[it->second].second;
    if (v.type() != GgufType::kU32 || !IsPowerOfTwo(v.u64())) {
      return DataLossError("general.alignment must be a u32 power of two, got " +
                           std::string(GgufTypeName(v.type())) + " " + v.ToString());
    }
    alignment = static_cast<uint32_t>(v.u64());
  }

  std::vector<GgufTensorInfo> tensors(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& t = tensors[i];
    RETURN_IF_ERROR(c.ReadString(&t.name, "tensor name"));
    uint32_t n_dims = 0;
    RETURN_IF_ERROR(c.Read(&n_dims, "tensor dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return DataLossError("tensor '" + t.name + "': " + std::to_string(n_dims) +
                           " dimensions, expected 1 to " + std::to_string(kMaxDims));
    }
    t.dims.resize(n_dims);
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      RETURN_IF_ERROR(c.Read(&dim, "tensor dimension"));
      if (dim == 0 || dim > (uint64_t{1} << 40) ||
          static_cast<uint64_t>(t.n_elements) > (uint64_t{1} << 50) / dim) {
        return DataLossError("tensor '" + t.name + "': dimension " + std::to_string(d) + " = " +
                             std::to_string(dim) + " is zero or too large");
      }
      t.dims[d] = static_cast<int64_t>(dim);
      t.n_elements *= static_cast<int64_t>(dim);
    }
    uint32_t type_raw = 0;
    RETURN_IF_ERROR(c.Read(&type_raw, "tensor type"));
    const TypeTraits* traits = FindTypeTraits(type_raw);
    if (traits == nullptr) {
      return DataLossError("tensor '" + t.name + "': unknown type id " + std::to_string(type_raw));
    }
    if (!traits->supported) {
      return UnimplementedError("tensor '" + t.name + "' has type " + traits->name + " (id " +
                                std::to_string(type_raw) + "), which Forge does not support");
    }
    t.type = traits->type;
    if (t.dims[0] % traits->block_elems != 0) {
      return DataLossError("tensor '" + t.name + "': row length " + std::to_string(t.dims[0]) +
                           " is not a multiple of " + traits->name + "'s block of " +
                           std::to_string(traits->block_elems));
    }
    t.n_bytes = t.n_elements / traits->block_elems * traits->block_bytes;
    RETURN_IF_ERROR(c.Read(&t.offset, "tensor data offset"));
    if (t.offset % alignment != 0) {
      return DataLossError("tensor '" + t.name + "': data offset " + std::to_string(t.offset) +
                           " is not a multiple of the alignment " + std::to_string(alignment));
    }
    t.shard = shard;
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  uint64_t data_size = data_start <= size ? size - data_start : 0;
  if (n_tensors > 0 && data_start > size) {
    return DataLossError("truncated file: the data section would start at " +
                         std::to_string(data_start) + " past the end of the file (" +
                         std::to_string(size) + " bytes)");
  }
  std::vector<size_t> order(n_tensors);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  uint64_t prev_end = 0;
  const GgufTensorInfo* prev = nullptr;
  for (size_t i : order) {
    GgufTensorInfo& t = tensors[i];
    if (t.offset > data_size || static_cast<uint64_t>(t.n_bytes) > data_size - t.offset) {
      return DataLossError("tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", " +
                           std::to_string(t.offset + t.n_bytes) +
                           ") lies outside the data section of " + std::to_string(data_size) +
                           " bytes");
    }
    if (prev != nullptr && t.offset < prev_end) {
      return DataLossError("tensor '" + t.name + "' overlaps tensor '" + prev->name + "'");
    }
    prev_end = t.offset + t.n_bytes;
    prev = &t;
    t.file_offset = data_start + t.offset;
    t.data = data + t.file_offset;
  }

  if (shard == 0) {
    version_ = version;
    alignment_ = alignment;
    metadata_ = std::move(metadata);
    metadata_index_ = std::move(index);
  }
  for (GgufTensorInfo& t : tensors) {
    if (tensor_index_.count(t.name)) return DataLossError("duplicate tensor name '" + t.name + "'");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  if (mapped) files_.push_back(std::move(mapped));
  return Status::Ok();
}

Status GgufFile::LoadSplits(const GgufOpenOptions& options) {
  const GgufValue* count_v = Find("split.count");
  if (count_v == nullptr || !options.load_splits) return Status::Ok();
  ASSIGN_OR_RETURN(uint32_t count, GetU32("split.count"));
  ASSIGN_OR_RETURN(uint32_t no, GetU32Or("split.no", 0));
  if (count <= 1) return Status::Ok();
  if (count > 9999) return DataLossError(path_ + ": split.count " + std::to_string(count));
  if (no != 0) {
    return InvalidArgumentError(path_ + ": is split " + std::to_string(no + 1) + " of " +
                                std::to_string(count) + "; open the first split instead");
  }
  GgufSplitName name;
  if (!ParseGgufSplitName(path_, &name) || name.index != 1 ||
      name.count != static_cast<int>(count)) {
    return InvalidArgumentError(path_ + ": split.count is " + std::to_string(count) +
                                " but the file name does not end in -00001-of-" +
                                GgufSplitPath("", 1, count).substr(10));
  }
  for (uint32_t i = 1; i < count; ++i) {
    std::string path = GgufSplitPath(name.prefix, i + 1, count);
    ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
    // Parse the shard on its own first to read its split keys.
    ASSIGN_OR_RETURN(auto probe, OpenBuffer(mapped->data(), mapped->size()));
    ASSIGN_OR_RETURN(uint32_t shard_no, probe->GetU32("split.no"));
    ASSIGN_OR_RETURN(uint32_t shard_count, probe->GetU32("split.count"));
    if (shard_no != i || shard_count != count) {
      return DataLossError(path + ": split.no/split.count are " + std::to_string(shard_no) + "/" +
                           std::to_string(shard_count) + ", expected " + std::to_string(i) + "/" +
                           std::to_string(count));
    }
    const uint8_t* data = mapped->data();
    size_t size = mapped->size();
    RETURN_IF_ERROR(AddShard(std::move(mapped), data, size, static_cast<int>(i)).WithContext(path));
    shard_paths_.push_back(path);
  }
  if (const GgufValue* n = Find("split.tensors.count")) {
    if (GgufIsInteger(n->type()) && n->u64() != tensors_.size()) {
      return DataLossError(path_ + ": split.tensors.count is " + n->ToString() + " but the " +
                           std::to_string(count) + " files hold " +
                           std::to_string(tensors_.size()) + " tensors");
    }
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

int64_t GgufFile::TotalTensorBytes() const {
  int64_t total = 0;
  for (const auto& t : tensors_) total += t.n_bytes;
  return total;
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

}  // namespace forge
