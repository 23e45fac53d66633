// The GGUF parser: header, metadata, tensor table and data section, checked against the bytes
// actually present so that a corrupt or hostile file is an error, never a crash or a huge
// allocation. Split models are merged in gguf_split.cc.
#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace forge {
namespace {

constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
// Metadata values (array items included) per file. Each costs sizeof(GgufValue) in memory, so
// this caps what a file can make us allocate; real vocabularies hold well under a million.
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 24;
constexpr uint64_t kMaxDim = uint64_t{1} << 40;
constexpr uint64_t kMaxElements = uint64_t{1} << 50;
constexpr const char* kShort = " (truncated or corrupt file)";

// A name from the file, fit for an error message: control bytes escaped, long names cut.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out + "'";
}

// Bounds-checked little-endian cursor over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (left() < sizeof(T)) {
      return DataLossError(std::string("truncated file: ") + what + " needs " +
                           std::to_string(sizeof(T)) + " bytes at offset " + std::to_string(pos_) +
                           ", " + std::to_string(left()) + " left");
    }
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status ReadString(std::string* out, const char* what) {
    uint64_t len = 0;
    RETURN_IF_ERROR(Read(&len, what));
    if (len > left()) {
      return DataLossError(std::string(what) + ": string length " + std::to_string(len) +
                           " at offset " + std::to_string(pos_ - 8) + " exceeds the " +
                           std::to_string(left()) + " bytes left in the file" + kShort);
    }
    if (len > kMaxStringBytes) {
      return DataLossError(std::string(what) + ": string length " + std::to_string(len) +
                           " exceeds the limit of " + std::to_string(kMaxStringBytes));
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Reads metadata values, counting them against kMaxMetadataValues.
class ValueReader {
 public:
  explicit ValueReader(Cursor& c) : c_(c) {}

  Status Read(GgufType type, int depth, const std::string& key, GgufValue* out) {
    switch (type) {
      case GgufType::kU8:
        return Scalar<uint8_t>("u8 value", GgufValue::U8, out);
      case GgufType::kI8:
        return Scalar<int8_t>("i8 value", GgufValue::I8, out);
      case GgufType::kU16:
        return Scalar<uint16_t>("u16 value", GgufValue::U16, out);
      case GgufType::kI16:
        return Scalar<int16_t>("i16 value", GgufValue::I16, out);
      case GgufType::kU32:
        return Scalar<uint32_t>("u32 value", GgufValue::U32, out);
      case GgufType::kI32:
        return Scalar<int32_t>("i32 value", GgufValue::I32, out);
      case GgufType::kU64:
        return Scalar<uint64_t>("u64 value", GgufValue::U64, out);
      case GgufType::kI64:
        return Scalar<int64_t>("i64 value", GgufValue::I64, out);
      case GgufType::kF32:
        return Scalar<float>("f32 value", GgufValue::F32, out);
      case GgufType::kF64:
        return Scalar<double>("f64 value", GgufValue::F64, out);
      case GgufType::kBool: {
        uint8_t v = 0;
        RETURN_IF_ERROR(c_.Read(&v, "bool value"));
        if (v > 1) {
          return DataLossError(Quote(key) + ": bool value " + std::to_string(int{v}) +
                               " is not 0 or 1");
        }
        *out = GgufValue::Bool(v != 0);
        return Status::Ok();
      }
      case GgufType::kString: {
        std::string s;
        RETURN_IF_ERROR(c_.ReadString(&s, "string value"));
        *out = GgufValue::String(std::move(s));
        return Status::Ok();
      }
      case GgufType::kArray:
        return Array(depth, key, out);
    }
    return DataLossError(Quote(key) + ": unknown value type " +
                         std::to_string(static_cast<uint32_t>(type)));
  }

 private:
  template <typename T, typename Make>
  Status Scalar(const char* what, Make make, GgufValue* out) {
    T v{};
    RETURN_IF_ERROR(c_.Read(&v, what));
    *out = make(v);
    return Status::Ok();
  }

  Status Array(int depth, const std::string& key, GgufValue* out) {
    if (depth >= kMaxArrayDepth) {
      return DataLossError(Quote(key) + ": arrays nested deeper than " +
                           std::to_string(kMaxArrayDepth) + " levels");
    }
    uint32_t elem_raw = 0;
    uint64_t count = 0;
    RETURN_IF_ERROR(c_.Read(&elem_raw, "array element type"));
    if (elem_raw >= kGgufTypeCount) {
      return DataLossError(Quote(key) + ": unknown array element type " + std::to_string(elem_raw));
    }
    RETURN_IF_ERROR(c_.Read(&count, "array length"));
    GgufType elem = static_cast<GgufType>(elem_raw);
    // The smallest encoding of one element: its scalar size, or a length/header for
    // strings/arrays.
    size_t min_elem = GgufScalarSize(elem);
    if (elem == GgufType::kString) min_elem = 8;
    if (elem == GgufType::kArray) min_elem = 12;
    if (count > c_.left() / min_elem) {
      return DataLossError(Quote(key) + ": array of " + std::to_string(count) + " " +
                           std::string(GgufTypeName(elem)) + " cannot fit in the " +
                           std::to_string(c_.left()) + " bytes left in the file" + kShort);
    }
    if (count > values_left_) {
      return ResourceExhaustedError(
          Quote(key) + ": array of " + std::to_string(count) + " items passes the limit of " +
          std::to_string(kMaxMetadataValues) + " metadata values per file");
    }
    values_left_ -= count;
    std::vector<GgufValue> items(count);
    for (uint64_t i = 0; i < count; ++i) {
      RETURN_IF_ERROR(Read(elem, depth + 1, key, &items[i]));
    }
    *out = GgufValue::Array(elem, std::move(items));
    return Status::Ok();
  }

  Cursor& c_;
  uint64_t values_left_ = kMaxMetadataValues;
};

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

Status CheckVersion(uint32_t version) {
  if (version == 2 || version == 3) return Status::Ok();
  if (version == 1) {
    return UnimplementedError("GGUF version 1 is not supported (expected 2 or 3)");
  }
  // A big-endian file stores its version's bytes reversed: 3 reads as 0x03000000.
  uint32_t swapped = __builtin_bswap32(version);
  if (swapped >= 1 && swapped <= 3) {
    return UnimplementedError("big-endian GGUF files are not supported (version " +
                              std::to_string(swapped) + " stored big-endian)");
  }
  return UnimplementedError("unsupported GGUF version " + std::to_string(version) +
                            " (expected 2 or 3)");
}

// Reads one tensor info entry (name, dims, type, offset) and checks it on its own.
Status ReadTensorInfo(Cursor& c, uint32_t alignment, GgufTensorInfo* t) {
  RETURN_IF_ERROR(c.ReadString(&t->name, "tensor name"));
  const std::string name = "tensor " + Quote(t->name);
  uint32_t n_dims = 0;
  RETURN_IF_ERROR(c.Read(&n_dims, "tensor dimension count"));
  if (n_dims == 0 || n_dims > kMaxDims) {
    return DataLossError(name + ": " + std::to_string(n_dims) + " dimensions, expected 1 to " +
                         std::to_string(kMaxDims));
  }
  t->dims.resize(n_dims);
  t->n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    RETURN_IF_ERROR(c.Read(&dim, "tensor dimension"));
    if (dim == 0 || dim > kMaxDim) {
      return DataLossError(name + ": dimension " + std::to_string(d) + " is " +
                           std::to_string(dim) + ", expected 1 to 2^40");
    }
    if (static_cast<uint64_t>(t->n_elements) > kMaxElements / dim) {
      return DataLossError(name +
                           ": the product of its dimensions passes 2^50 elements at "
                           "dimension " +
                           std::to_string(d) + " (" + std::to_string(dim) + ")");
    }
    t->dims[d] = static_cast<int64_t>(dim);
    t->n_elements *= static_cast<int64_t>(dim);
  }
  uint32_t type_raw = 0;
  RETURN_IF_ERROR(c.Read(&type_raw, "tensor type"));
  const TypeTraits* traits = FindTypeTraits(type_raw);
  if (traits == nullptr) {
    return DataLossError(name + ": unknown type id " + std::to_string(type_raw));
  }
  if (!traits->supported) {
    return UnimplementedError(name + " has type " + traits->name + " (id " +
                              std::to_string(type_raw) + "), which Forge does not support");
  }
  t->type = traits->type;
  if (t->dims[0] % traits->block_elems != 0) {
    return DataLossError(name + ": row length " + std::to_string(t->dims[0]) +
                         " is not a multiple of " + traits->name + "'s block of " +
                         std::to_string(traits->block_elems));
  }
  t->n_bytes = t->n_elements / traits->block_elems * traits->block_bytes;
  RETURN_IF_ERROR(c.Read(&t->offset, "tensor data offset"));
  if (t->offset % alignment != 0) {
    return DataLossError(name + ": data offset " + std::to_string(t->offset) +
                         " is not a multiple of the alignment " + std::to_string(alignment));
  }
  return Status::Ok();
}

}  // namespace

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
    std::snprintf(buf, sizeof(buf), "not a GGUF file: bad magic 0x%08x, expected 0x%08x (\"GGUF\")",
                  magic, kGgufMagic);
    return InvalidArgumentError(buf);
  }
  RETURN_IF_ERROR(c.Read(&version, "version"));
  RETURN_IF_ERROR(CheckVersion(version));
  uint64_t n_tensors = 0, n_kv = 0;
  RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  RETURN_IF_ERROR(c.Read(&n_kv, "metadata count"));
  // A key/value needs at least 8 (key length) + 1 (key) + 4 (type) + 1 bytes; a tensor info
  // 8 (name length) + 4 (n_dims) + 8 (a dimension) + 4 (type) + 8 (offset).
  if (n_kv > c.left() / 14) {
    return DataLossError("metadata count " + std::to_string(n_kv) + " cannot fit in the " +
                         std::to_string(c.left()) + " bytes left in the file" + kShort);
  }
  if (n_tensors > c.left() / 32) {
    return DataLossError("tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                         std::to_string(c.left()) + " bytes left in the file" + kShort);
  }

  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::map<std::string, size_t> index;
  ValueReader values(c);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    RETURN_IF_ERROR(c.ReadString(&key, "metadata key"));
    if (key.empty()) return DataLossError("metadata key " + std::to_string(i) + " is empty");
    if (index.count(key)) return DataLossError("duplicate metadata key " + Quote(key));
    uint32_t type_raw = 0;
    RETURN_IF_ERROR(c.Read(&type_raw, "metadata value type"));
    if (type_raw >= kGgufTypeCount) {
      return DataLossError(Quote(key) + ": unknown metadata value type " +
                           std::to_string(type_raw));
    }
    GgufValue value;
    RETURN_IF_ERROR(values.Read(static_cast<GgufType>(type_raw), 0, key, &value));
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
  std::map<std::string, size_t> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& t = tensors[i];
    RETURN_IF_ERROR(ReadTensorInfo(c, alignment, &t));
    if (names.count(t.name) || tensor_index_.count(t.name)) {
      return DataLossError("duplicate tensor name " + Quote(t.name));
    }
    names[t.name] = i;
    t.shard = shard;
  }

  // The data section starts at the next multiple of the alignment. Only the bytes of tensor
  // data must be present: a file cut in the padding after the last tensor (or, without tensors,
  // after the tensor table) loses nothing and opens.
  uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  uint64_t data_size = data_start <= size ? size - data_start : 0;
  if (n_tensors > 0 && data_start > size) {
    return DataLossError("truncated file: the data section would start at " +
                         std::to_string(data_start) + ", past the end of the file (" +
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
    uint64_t n_bytes = static_cast<uint64_t>(t.n_bytes);
    if (t.offset > data_size || n_bytes > data_size - t.offset) {
      return DataLossError("tensor " + Quote(t.name) + ": data [" + std::to_string(t.offset) +
                           ", " + std::to_string(t.offset + n_bytes) +
                           ") lies outside the data section of " + std::to_string(data_size) +
                           " bytes" + kShort);
    }
    if (prev != nullptr && t.offset < prev_end) {
      return DataLossError("tensor " + Quote(t.name) + " at [" + std::to_string(t.offset) + ", " +
                           std::to_string(t.offset + n_bytes) + ") overlaps tensor " +
                           Quote(prev->name) + " ending at " + std::to_string(prev_end));
    }
    prev_end = t.offset + n_bytes;
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
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  if (mapped) files_.push_back(std::move(mapped));
  return Status::Ok();
}

}  // namespace forge
