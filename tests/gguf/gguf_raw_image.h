// RawGguf: GGUF images built field by field for the corrupt-file tests, so that any field can
// hold any value (the writer refuses invalid ones); and helpers to check a rejection.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace forge::testing {

class RawGguf {
 public:
  std::vector<uint8_t> bytes;

  size_t size() const { return bytes.size(); }
  template <typename T>
  RawGguf& Put(T v) {
    size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
  RawGguf& Raw(std::string_view s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& Str(std::string_view s) { return Put<uint64_t>(s.size()).Raw(s); }
  // Magic, version and the two counts.
  RawGguf& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return Raw("GGUF").Put<uint32_t>(version).Put<uint64_t>(n_tensors).Put<uint64_t>(n_kv);
  }
  // A key and its value type; the value follows with Put/Str.
  RawGguf& Key(std::string_view key, GgufType type) {
    return Str(key).Put<uint32_t>(static_cast<uint32_t>(type));
  }
  RawGguf& KvU32(std::string_view key, uint32_t v) { return Key(key, GgufType::kU32).Put(v); }
  RawGguf& KvString(std::string_view key, std::string_view v) {
    return Key(key, GgufType::kString).Str(v);
  }
  // An array header: element type and length; the elements follow.
  RawGguf& ArrayHeader(GgufType elem, uint64_t n) {
    return Put<uint32_t>(static_cast<uint32_t>(elem)).Put<uint64_t>(n);
  }
  RawGguf& Tensor(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type,
                  uint64_t offset) {
    Str(name).Put<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) Put<uint64_t>(d);
    return Put<uint32_t>(type).Put<uint64_t>(offset);
  }
  RawGguf& Zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  RawGguf& Align(size_t a = 32) {
    bytes.resize((bytes.size() + a - 1) / a * a, 0);
    return *this;
  }
};

// A small valid file from the writer: strings, an array, a nested array, and two tensors.
inline std::vector<uint8_t> SmallWriterImage(bool with_tensors = true) {
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  w.Set("llama.block_count", GgufValue::U32(2));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"<unk>", "a", "bc"}));
  w.Set("nested", GgufValue::Array(GgufType::kArray, {GgufValue::I32Array({1, 2})}));
  w.Set("flag", GgufValue::Bool(true));
  if (with_tensors) {
    std::vector<uint8_t> a(4 * 6), b(34 * 2);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(100 + i);
    EXPECT_TRUE(w.AddTensor("a", GgmlType::kF32, {3, 2}, a).ok());
    EXPECT_TRUE(w.AddTensor("b", GgmlType::kQ8_0, {32, 2}, b).ok());
  }
  auto buf = w.WriteToBuffer();
  EXPECT_TRUE(buf.ok());
  return buf.ok() ? *buf : std::vector<uint8_t>{};
}

inline Status OpenStatus(const std::vector<uint8_t>& bytes) {
  return GgufFile::OpenBuffer(bytes.data(), bytes.size()).status();
}

// Checks that `bytes` is rejected with `code` and a one-line message containing every `parts`.
inline ::testing::AssertionResult Rejected(const std::vector<uint8_t>& bytes, StatusCode code,
                                           std::initializer_list<std::string_view> parts) {
  Status st = OpenStatus(bytes);
  if (st.ok()) return ::testing::AssertionFailure() << "opened, expected an error";
  if (st.code() != code) {
    return ::testing::AssertionFailure() << "code " << StatusCodeName(st.code()) << ", expected "
                                         << StatusCodeName(code) << ": " << st.message();
  }
  for (std::string_view p : parts) {
    if (st.message().find(p) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << st.message();
    }
  }
  if (st.message().find('\n') != std::string::npos || st.message().size() > 400) {
    return ::testing::AssertionFailure() << "message is not one short line: " << st.message();
  }
  return ::testing::AssertionSuccess() << st.message();
}

}  // namespace forge::testing
