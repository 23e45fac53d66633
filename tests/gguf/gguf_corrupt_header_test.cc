// Corrupt GGUF files, part 1: magic, version, truncation at every byte and inside every section,
// absurd counts and lengths, and bad metadata. Each must be refused with a message naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "gguf/gguf_file.h"
#include "gguf/gguf_raw_image.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::OpenStatus;
using testing::RawGguf;
using testing::Rejected;
using testing::SmallWriterImage;

constexpr uint64_t k2p60 = uint64_t{1} << 60;
constexpr uint64_t k2p63 = uint64_t{1} << 63;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::vector<uint8_t> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

std::vector<uint8_t> Prefix(const std::vector<uint8_t>& v, size_t n) {
  return std::vector<uint8_t>(v.begin(), v.begin() + n);
}

TEST(GgufCorruptTest, ValidImagesOpen) {
  EXPECT_TRUE(OpenStatus(SmallWriterImage()).ok()) << OpenStatus(SmallWriterImage()).ToString();
  EXPECT_TRUE(OpenStatus(SmallWriterImage(false)).ok());
}

TEST(GgufCorruptTest, BadMagic) {
  std::vector<uint8_t> img = SmallWriterImage();
  img[0] = 'g';
  EXPECT_TRUE(Rejected(img, StatusCode::kInvalidArgument, {"not a GGUF file", "bad magic"}));
  std::memcpy(img.data(), "GGML", 4);
  EXPECT_TRUE(Rejected(img, StatusCode::kInvalidArgument, {"0x4c4d4747"}));
  std::vector<uint8_t> real = ReadAll(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_GT(real.size(), 1000u);
  real[3] = 'V';
  EXPECT_TRUE(Rejected(real, StatusCode::kInvalidArgument, {"bad magic"}));
}

TEST(GgufCorruptTest, UnsupportedVersions) {
  std::vector<uint8_t> img = SmallWriterImage();
  auto with_version = [&](uint32_t v) {
    std::vector<uint8_t> out = img;
    std::memcpy(out.data() + 4, &v, 4);
    return out;
  };
  EXPECT_TRUE(Rejected(with_version(1), StatusCode::kUnimplemented, {"GGUF version 1"}));
  EXPECT_TRUE(Rejected(with_version(4), StatusCode::kUnimplemented,
                       {"unsupported GGUF version 4", "expected 2 or 3"}));
  EXPECT_TRUE(Rejected(with_version(0), StatusCode::kUnimplemented, {"version 0"}));
  EXPECT_TRUE(Rejected(with_version(0xffffffffu), StatusCode::kUnimplemented, {"4294967295"}));
  // Big-endian files store the version with its bytes reversed (3 -> 00 00 00 03).
  for (uint32_t v : {2u, 3u}) {
    EXPECT_TRUE(Rejected(with_version(__builtin_bswap32(v)), StatusCode::kUnimplemented,
                         {"big-endian", "version " + std::to_string(v)}));
  }
}

// Every prefix of a small file is refused as truncated (never a crash); the whole file opens.
TEST(GgufCorruptTest, TruncationAtEveryByte) {
  std::vector<uint8_t> img = SmallWriterImage();
  for (size_t n = 0; n < img.size(); ++n) {
    EXPECT_TRUE(Rejected(Prefix(img, n), StatusCode::kDataLoss, {"truncated"})) << "prefix " << n;
  }
  EXPECT_TRUE(OpenStatus(img).ok());
}

// Without tensors, the padding after the tensor table holds nothing: a prefix that keeps every
// metadata byte opens (with the same metadata), any shorter one is refused. Decided so because
// the padding carries no information and llama.cpp accepts such files too.
TEST(GgufCorruptTest, TruncationInTrailingPaddingWithoutTensors) {
  std::vector<uint8_t> img = SmallWriterImage(false);
  // The last value is the bool `flag` = 1: its byte is the last non-zero one.
  size_t end = img.size();
  while (end > 0 && img[end - 1] == 0) --end;
  ASSERT_LT(end, img.size()) << "expected padding after the metadata";
  for (size_t n = 0; n < img.size(); ++n) {
    Status st = OpenStatus(Prefix(img, n));
    if (n < end) {
      EXPECT_TRUE(Rejected(Prefix(img, n), StatusCode::kDataLoss, {"truncated"})) << n;
    } else {
      ASSERT_TRUE(st.ok()) << "prefix " << n << ": " << st.ToString();
      auto f = GgufFile::OpenBuffer(img.data(), n);
      EXPECT_TRUE(*(*f)->GetBool("flag"));
      EXPECT_EQ((*f)->metadata().size(), 5u);
    }
  }
}

// The real files: prefixes through the tensor table, then every 997th byte of the data and the
// last bytes. They end where their last tensor ends, so every prefix is refused.
TEST(GgufCorruptTest, TruncationOfRealFiles) {
  for (const char* name : {"models/stories260K.gguf", "models/stories260K-q8_0.gguf"}) {
    std::vector<uint8_t> real = ReadAll(testing::TestDataPath(name));
    ASSERT_GT(real.size(), 20000u);
    auto full = GgufFile::OpenBuffer(real.data(), real.size());
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    size_t data_start = real.size();
    for (const auto& t : (*full)->tensors()) data_start = std::min(data_start, t.file_offset);
    // Every byte of the primary file's head; every 7th of the second's (time under ASan).
    const size_t step = name == std::string("models/stories260K.gguf") ? 1 : 7;
    std::vector<size_t> cuts;
    for (size_t n = 0; n <= data_start; n += step) cuts.push_back(n);
    for (size_t n = data_start; n < real.size(); n += 997) cuts.push_back(n);
    for (size_t n = real.size() - 64; n < real.size(); ++n) cuts.push_back(n);
    int refused = 0;
    for (size_t n : cuts) {
      Status st = GgufFile::OpenBuffer(real.data(), n).status();
      if (st.code() == StatusCode::kDataLoss &&
          st.message().find("truncated") != std::string::npos) {
        ++refused;
      } else {
        ADD_FAILURE() << name << " prefix " << n << ": " << st.ToString();
      }
    }
    EXPECT_EQ(refused, static_cast<int>(cuts.size()));
  }
}

// A cut inside each section names what it was reading there.
TEST(GgufCorruptTest, TruncationInsideEachSection) {
  RawGguf g;
  g.Header(/*n_tensors=*/1, /*n_kv=*/3);
  const size_t kv_a = g.size();
  g.KvString("general.architecture", "llama");
  const size_t kv_b = g.size();
  g.Key("tokenizer.ggml.scores", GgufType::kArray).ArrayHeader(GgufType::kF32, 64);
  for (int i = 0; i < 64; ++i) g.Put<float>(-1.0f * i);
  const size_t kv_c = g.size();
  g.Key("flag", GgufType::kBool).Put<uint8_t>(1);
  const size_t info = g.size();
  g.Tensor("a", {8}, /*F32*/ 0, 0);
  const size_t info_end = g.size();
  g.Align();
  const size_t data = g.size();
  g.Zeros(32);
  ASSERT_TRUE(OpenStatus(g.bytes).ok()) << OpenStatus(g.bytes).ToString();
  ASSERT_EQ(kv_a, 24u);

  const size_t key_b = kv_b + 8, type_b = key_b + 21, arr_b = type_b + 4;
  const size_t name = info + 8, dims = name + 1 + 4, type = dims + 8;
  const std::vector<std::pair<size_t, std::string>> cases = {
      {2, "magic needs 4 bytes"},
      {6, "version needs 4 bytes"},
      {12, "tensor count needs 8 bytes"},
      {20, "metadata count needs 8 bytes"},
      {24, "metadata count 3 cannot fit"},
      {kv_a + 20, "metadata count 3 cannot fit"},
      {kv_b - 2, "string value: string length 5"},
      {kv_b + 4, "metadata key needs 8 bytes"},
      {key_b + 10, "metadata key: string length 21"},
      {type_b + 2, "metadata value type needs 4 bytes"},
      {arr_b + 2, "array element type needs 4 bytes"},
      {arr_b + 7, "array length needs 8 bytes"},
      {arr_b + 12 + 100, "array of 64 f32 cannot fit"},
      {kv_c + 8 + 4 + 4, "bool value needs 1 bytes"},
      {info + 3, "tensor name needs 8 bytes"},
      {name, "tensor name: string length 1"},
      {name + 1 + 2, "tensor dimension count needs 4 bytes"},
      {dims + 3, "tensor dimension needs 8 bytes"},
      {type + 1, "tensor type needs 4 bytes"},
      {type + 4 + 5, "tensor data offset needs 8 bytes"},
      {info_end, "the data section would start at " + std::to_string(data)},
      {data - 1, "the data section would start at"},
      {data, "lies outside the data section of 0 bytes"},
      {data + 31, "data [0, 32) lies outside the data section of 31 bytes"},
  };
  for (const auto& [cut, want] : cases) {
    EXPECT_TRUE(Rejected(Prefix(g.bytes, cut), StatusCode::kDataLoss, {"truncated", want}))
        << "cut at " << cut;
  }
}

TEST(GgufCorruptTest, AbsurdCounts) {
  auto header = [](uint64_t n_tensors, uint64_t n_kv) {
    RawGguf g;
    g.Header(n_tensors, n_kv).Zeros(200);
    return g.bytes;
  };
  EXPECT_TRUE(Rejected(header(k2p60, 0), StatusCode::kDataLoss,
                       {"tensor count 1152921504606846976 cannot fit"}));
  EXPECT_TRUE(Rejected(header(~uint64_t{0}, 0), StatusCode::kDataLoss,
                       {"tensor count 18446744073709551615"}));
  EXPECT_TRUE(Rejected(header(0, k2p60), StatusCode::kDataLoss,
                       {"metadata count 1152921504606846976 cannot fit"}));
  EXPECT_TRUE(Rejected(header(0, k2p63), StatusCode::kDataLoss, {"metadata count 92233720"}));
  // Counts that pass the first bound but not the bytes actually there.
  RawGguf g;
  g.Header(0, 3).KvU32(std::string(30, 'k'), 1);
  EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss, {"truncated file: metadata key needs"}));
}

TEST(GgufCorruptTest, AbsurdArrayLengths) {
  for (GgufType elem : {GgufType::kU8, GgufType::kU64, GgufType::kString, GgufType::kArray}) {
    RawGguf g;
    g.Header(0, 1).Key("arr", GgufType::kArray).ArrayHeader(elem, k2p60).Zeros(100);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss,
                         {"'arr'", "array of 1152921504606846976", "cannot fit"}));
  }
}

TEST(GgufCorruptTest, AbsurdStringLengths) {
  {
    RawGguf g;
    g.Header(0, 1).Put<uint64_t>(k2p63).Zeros(64);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss,
                         {"metadata key: string length 9223372036854775808"}));
  }
  {
    RawGguf g;
    g.Header(0, 1).Key("s", GgufType::kString).Put<uint64_t>(k2p63).Zeros(64);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss,
                         {"string value: string length 9223372036854775808"}));
  }
  {
    RawGguf g;
    g.Header(0, 1).Key("v", GgufType::kArray).ArrayHeader(GgufType::kString, 2).Str("ok");
    g.Put<uint64_t>(~uint64_t{0}).Zeros(64);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss, {"string length 18446744073709551615"}));
  }
  {
    RawGguf g;
    g.Header(1, 0).Put<uint64_t>(k2p63).Zeros(64);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss,
                         {"tensor name: string length 9223372036854775808"}));
  }
}

// More array items than Forge keeps per file is refused before anything is allocated.
TEST(GgufCorruptTest, MetadataValueLimit) {
  const uint64_t n = (uint64_t{1} << 24) + 1;
  RawGguf g;
  g.Header(0, 1).Key("big", GgufType::kArray).ArrayHeader(GgufType::kU8, n).Zeros(n);
  EXPECT_TRUE(Rejected(g.bytes, StatusCode::kResourceExhausted,
                       {"'big'", "16777217", "limit of 16777216 metadata values"}));
}

TEST(GgufCorruptTest, DuplicateAndEmptyKeys) {
  RawGguf g;
  g.Header(0, 3).KvU32("a", 1).KvU32("b", 2).KvString("a", "x");
  EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss, {"duplicate metadata key 'a'"}));
  RawGguf e;
  e.Header(0, 2).KvU32("a", 1).KvU32("", 2);
  EXPECT_TRUE(Rejected(e.bytes, StatusCode::kDataLoss, {"metadata key 1 is empty"}));
  // A hostile key is quoted on one short line: control bytes escaped, length cut.
  std::string key = "bad\nkey" + std::string(5000, 'k');
  RawGguf h;
  h.Header(0, 2).KvU32(key, 1).KvU32(key, 2);
  EXPECT_TRUE(Rejected(h.bytes, StatusCode::kDataLoss,
                       {"duplicate metadata key 'bad\\x0akey", "(5007 bytes)"}));
}

TEST(GgufCorruptTest, UnknownValueTypes) {
  for (uint32_t type : {13u, 14u, 255u, 0xffffffffu}) {
    RawGguf g;
    g.Header(0, 1).Key("k", static_cast<GgufType>(type)).Zeros(32);
    EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss,
                         {"'k': unknown metadata value type " + std::to_string(type)}));
    RawGguf a;
    a.Header(0, 1).Key("arr", GgufType::kArray).ArrayHeader(static_cast<GgufType>(type), 1);
    a.Zeros(32);
    EXPECT_TRUE(Rejected(a.bytes, StatusCode::kDataLoss,
                         {"'arr': unknown array element type " + std::to_string(type)}));
  }
}

// Arrays nest up to 4 levels; deeper is refused, however deep (no stack overflow).
TEST(GgufCorruptTest, DeeplyNestedArrays) {
  auto nested = [](int levels) {
    RawGguf g;
    g.Header(0, 1).Key("deep", GgufType::kArray);
    for (int i = 1; i < levels; ++i) g.ArrayHeader(GgufType::kArray, 1);
    g.ArrayHeader(GgufType::kU8, 1).Put<uint8_t>(7);
    return g.bytes;
  };
  std::vector<uint8_t> four = nested(4);
  auto f = GgufFile::OpenBuffer(four.data(), four.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufValue* v = (*f)->Find("deep");
  for (int i = 0; i < 3; ++i) v = &v->items()[0];
  EXPECT_EQ(v->items()[0].u64(), 7u);
  EXPECT_TRUE(Rejected(nested(5), StatusCode::kDataLoss, {"'deep': arrays nested deeper than 4"}));
  EXPECT_TRUE(Rejected(nested(100000), StatusCode::kDataLoss, {"nested deeper than 4"}));
}

TEST(GgufCorruptTest, BoolValueTwo) {
  RawGguf g;
  g.Header(0, 1).Key("flag", GgufType::kBool).Put<uint8_t>(2);
  EXPECT_TRUE(Rejected(g.bytes, StatusCode::kDataLoss, {"'flag': bool value 2 is not 0 or 1"}));
  RawGguf a;
  a.Header(0, 1).Key("flags", GgufType::kArray).ArrayHeader(GgufType::kBool, 3);
  a.Put<uint8_t>(0).Put<uint8_t>(1).Put<uint8_t>(255);
  EXPECT_TRUE(Rejected(a.bytes, StatusCode::kDataLoss, {"'flags': bool value 255"}));
}

TEST(GgufCorruptTest, BadAlignment) {
  auto with = [](auto put_value) {
    RawGguf g;
    g.Header(0, 1);
    put_value(g);
    return g.bytes;
  };
  const StatusCode kLoss = StatusCode::kDataLoss;
  const char* kMsg = "general.alignment must be a u32 power of two, got ";
  EXPECT_TRUE(
      Rejected(with([](RawGguf& g) { g.KvU32("general.alignment", 0); }), kLoss, {kMsg, "u32 0"}));
  EXPECT_TRUE(
      Rejected(with([](RawGguf& g) { g.KvU32("general.alignment", 3); }), kLoss, {kMsg, "u32 3"}));
  EXPECT_TRUE(
      Rejected(with([](RawGguf& g) { g.KvU32("general.alignment", 96); }), kLoss, {"u32 96"}));
  EXPECT_TRUE(Rejected(
      with([](RawGguf& g) { g.Key("general.alignment", GgufType::kU64).Put<uint64_t>(32); }), kLoss,
      {kMsg, "u64 32"}));
  EXPECT_TRUE(Rejected(
      with([](RawGguf& g) { g.Key("general.alignment", GgufType::kI32).Put<int32_t>(32); }), kLoss,
      {kMsg, "i32 32"}));
  EXPECT_TRUE(Rejected(with([](RawGguf& g) { g.KvString("general.alignment", "32"); }), kLoss,
                       {kMsg, "string \"32\""}));
  auto good = with([](RawGguf& g) { g.KvU32("general.alignment", 64); });
  auto f = GgufFile::OpenBuffer(good.data(), good.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 64u);
}

}  // namespace
}  // namespace forge
