// GGUF serialization: little-endian header, metadata, tensor table, aligned tensor data.
#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstring>

#include "gguf/gguf_file.h"

namespace forge {
namespace {

class Bytes {
 public:
  explicit Bytes(std::vector<uint8_t>* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    PutRaw(&v, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    PutRaw(s.data(), s.size());
  }
  // resize + memcpy rather than insert: GCC 12 warns (-Wstringop-overflow) on the inlined insert.
  void PutRaw(const void* p, size_t n) {
    if (n == 0) return;
    size_t at = out_->size();
    out_->resize(at + n);
    std::memcpy(out_->data() + at, p, n);
  }
  void PutValue(const GgufValue& v) {
    switch (v.type()) {
      case GgufType::kU8:
        Put<uint8_t>(static_cast<uint8_t>(v.u64()));
        break;
      case GgufType::kI8:
        Put<int8_t>(static_cast<int8_t>(v.i64()));
        break;
      case GgufType::kU16:
        Put<uint16_t>(static_cast<uint16_t>(v.u64()));
        break;
      case GgufType::kI16:
        Put<int16_t>(static_cast<int16_t>(v.i64()));
        break;
      case GgufType::kU32:
        Put<uint32_t>(static_cast<uint32_t>(v.u64()));
        break;
      case GgufType::kI32:
        Put<int32_t>(static_cast<int32_t>(v.i64()));
        break;
      case GgufType::kU64:
        Put<uint64_t>(v.u64());
        break;
      case GgufType::kI64:
        Put<int64_t>(v.i64());
        break;
      case GgufType::kF32:
        Put<float>(static_cast<float>(v.f64()));
        break;
      case GgufType::kF64:
        Put<double>(v.f64());
        break;
      case GgufType::kBool:
        Put<uint8_t>(v.boolean() ? 1 : 0);
        break;
      case GgufType::kString:
        PutString(v.str());
        break;
      case GgufType::kArray:
        Put<uint32_t>(static_cast<uint32_t>(v.elem_type()));
        Put<uint64_t>(v.items().size());
        for (const GgufValue& item : v.items()) {
          CHECK(item.type() == v.elem_type()) << "GGUF array holds a " << GgufTypeName(item.type())
                                              << " among " << GgufTypeName(v.elem_type());
          PutValue(item);
        }
        break;
    }
  }

 private:
  std::vector<uint8_t>* out_;
};

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufWriter::GgufWriter(uint32_t version, uint32_t alignment)
    : version_(version), alignment_(alignment) {
  CHECK(version == 2 || version == 3) << "GGUF version " << version;
  CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0) << "alignment " << alignment;
  if (alignment != kGgufDefaultAlignment) Set("general.alignment", GgufValue::U32(alignment));
}

GgufWriter::~GgufWriter() {
  if (out_ != nullptr) std::fclose(out_);
}

void GgufWriter::Set(const std::string& key, GgufValue value) {
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

Status GgufWriter::AddTensor(const std::string& name, GgmlType type,
                             const std::vector<int64_t>& dims) {
  if (out_ != nullptr) return FailedPreconditionError("GgufWriter: AddTensor after Begin");
  if (dims.empty() || dims.size() > 4) {
    return InvalidArgumentError(name + ": " + std::to_string(dims.size()) + " dimensions");
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0) return InvalidArgumentError(name + ": dimension " + std::to_string(d));
    n *= d;
  }
  ASSIGN_OR_RETURN(int64_t row_bytes, RowBytes(type, dims[0]));
  int64_t n_bytes = row_bytes * (n / dims[0]);
  for (const Tensor& t : tensors_) {
    if (t.name == name) return InvalidArgumentError("duplicate tensor name '" + name + "'");
  }
  uint64_t offset = AlignUp(data_size_, alignment_);
  tensors_.push_back({name, type, dims, n_bytes, offset, {}, false});
  data_size_ = offset + n_bytes;
  return Status::Ok();
}

Status GgufWriter::AddTensor(const std::string& name, GgmlType type,
                             const std::vector<int64_t>& dims, std::vector<uint8_t> data) {
  RETURN_IF_ERROR(AddTensor(name, type, dims));
  Tensor& t = tensors_.back();
  if (static_cast<int64_t>(data.size()) != t.n_bytes) {
    int64_t expected = t.n_bytes;
    tensors_.pop_back();
    return InvalidArgumentError(name + ": " + std::to_string(data.size()) + " bytes of data, " +
                                "expected " + std::to_string(expected));
  }
  t.data = std::move(data);
  t.has_data = true;
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::SerializeHead() const {
  std::vector<uint8_t> out;
  Bytes b(&out);
  b.Put<uint32_t>(kGgufMagic);
  b.Put<uint32_t>(version_);
  b.Put<uint64_t>(tensors_.size());
  b.Put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    b.PutString(key);
    b.Put<uint32_t>(static_cast<uint32_t>(value.type()));
    b.PutValue(value);
  }
  for (const Tensor& t : tensors_) {
    b.PutString(t.name);
    b.Put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) b.Put<uint64_t>(static_cast<uint64_t>(d));
    b.Put<uint32_t>(static_cast<uint32_t>(t.type));
    b.Put<uint64_t>(t.offset);
  }
  out.resize(AlignUp(out.size(), alignment_), 0);
  return out;
}

Status GgufWriter::Begin(const std::string& path) {
  if (out_ != nullptr) return FailedPreconditionError("GgufWriter: Begin called twice");
  out_ = std::fopen(path.c_str(), "wb");
  if (out_ == nullptr) return IoError(path + ": cannot create: " + std::strerror(errno));
  path_ = path;
  std::vector<uint8_t> head = SerializeHead();
  if (std::fwrite(head.data(), 1, head.size(), out_) != head.size()) {
    return IoError(path_ + ": write failed: " + std::strerror(errno));
  }
  next_tensor_ = 0;
  written_data_ = 0;
  return Status::Ok();
}

Status GgufWriter::WriteTensorData(size_t index, std::span<const uint8_t> bytes) {
  if (out_ == nullptr) return FailedPreconditionError("GgufWriter: WriteTensorData before Begin");
  if (index != next_tensor_ || index >= tensors_.size()) {
    return FailedPreconditionError("GgufWriter: tensor " + std::to_string(index) +
                                   " written out of order (next is " +
                                   std::to_string(next_tensor_) + ")");
  }
  const Tensor& t = tensors_[index];
  if (static_cast<int64_t>(bytes.size()) != t.n_bytes) {
    return InvalidArgumentError(t.name + ": " + std::to_string(bytes.size()) +
                                " bytes of data, expected " + std::to_string(t.n_bytes));
  }
  static const uint8_t kZeros[256] = {};
  while (written_data_ < t.offset) {
    size_t n = std::min<uint64_t>(sizeof(kZeros), t.offset - written_data_);
    if (std::fwrite(kZeros, 1, n, out_) != n) return IoError(path_ + ": write failed");
    written_data_ += n;
  }
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size()) {
    return IoError(path_ + ": write failed: " + std::strerror(errno));
  }
  written_data_ += bytes.size();
  ++next_tensor_;
  return Status::Ok();
}

Status GgufWriter::Finish() {
  if (out_ == nullptr) return FailedPreconditionError("GgufWriter: Finish before Begin");
  Status st = Status::Ok();
  if (next_tensor_ != tensors_.size()) {
    st = FailedPreconditionError(path_ + ": only " + std::to_string(next_tensor_) + " of " +
                                 std::to_string(tensors_.size()) + " tensors were written");
  }
  if (std::fclose(out_) != 0 && st.ok()) st = IoError(path_ + ": close failed");
  out_ = nullptr;
  return st;
}

Status GgufWriter::WriteFile(const std::string& path) {
  RETURN_IF_ERROR(Begin(path));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensors_[i].has_data) {
      return FailedPreconditionError(tensors_[i].name + ": declared without data");
    }
    RETURN_IF_ERROR(WriteTensorData(i, tensors_[i].data));
  }
  return Finish();
}

StatusOr<std::vector<uint8_t>> GgufWriter::WriteToBuffer() {
  std::vector<uint8_t> out = SerializeHead();
  size_t base = out.size();
  out.resize(base + data_size_, 0);
  for (const Tensor& t : tensors_) {
    if (!t.has_data) return FailedPreconditionError(t.name + ": declared without data");
    if (!t.data.empty()) std::memcpy(out.data() + base + t.offset, t.data.data(), t.data.size());
  }
  return out;
}

}  // namespace forge
