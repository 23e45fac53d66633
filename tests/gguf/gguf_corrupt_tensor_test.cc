// Corrupt GGUF files, part 2: the tensor table and the data section (dimensions, types, block
// sizes, offsets, overlaps, duplicates), mutations of a real file, and random byte mutations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_raw_image.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::OpenStatus;
using testing::RawGguf;
using testing::Rejected;
using testing::SmallWriterImage;

struct Info {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  uint64_t offset;
};

// One metadata key, the tensor infos, padding, then data_bytes of data.
std::vector<uint8_t> Image(const std::vector<Info>& infos, size_t data_bytes,
                           uint32_t alignment = 0) {
  RawGguf g;
  g.Header(infos.size(), alignment ? 2 : 1).KvString("general.architecture", "llama");
  if (alignment) g.KvU32("general.alignment", alignment);
  for (const Info& t : infos) g.Tensor(t.name, t.dims, t.type, t.offset);
  g.Align(alignment ? alignment : 32).Zeros(data_bytes);
  return g.bytes;
}

constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ4_K = 12;
constexpr StatusCode kLoss = StatusCode::kDataLoss;

TEST(GgufCorruptTensorTest, ValidTableOpens) {
  auto img = Image({{"a", {8}, kF32, 0}, {"b", {4, 2}, kF32, 32}}, 64);
  auto f = GgufFile::OpenBuffer(img.data(), img.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->FindTensor("b")->data, img.data() + img.size() - 32);
}

TEST(GgufCorruptTensorTest, DimensionCounts) {
  EXPECT_TRUE(Rejected(Image({{"a", {}, kF32, 0}}, 32), kLoss,
                       {"tensor 'a': 0 dimensions, expected 1 to 4"}));
  EXPECT_TRUE(
      Rejected(Image({{"a", {2, 2, 2, 2, 2}, kF32, 0}}, 128), kLoss, {"tensor 'a': 5 dimensions"}));
  RawGguf g;
  g.Header(1, 0).Str("a").Put<uint32_t>(0xffffffffu).Zeros(64);
  EXPECT_TRUE(Rejected(g.bytes, kLoss, {"4294967295 dimensions"}));
  // Four is allowed.
  EXPECT_TRUE(OpenStatus(Image({{"a", {2, 2, 2, 2}, kF32, 0}}, 64)).ok());
}

TEST(GgufCorruptTensorTest, BadDimensions) {
  EXPECT_TRUE(
      Rejected(Image({{"a", {8, 0}, kF32, 0}}, 32), kLoss, {"tensor 'a': dimension 1 is 0"}));
  EXPECT_TRUE(Rejected(Image({{"a", {uint64_t{1} << 41}, kF32, 0}}, 32), kLoss,
                       {"dimension 0 is 2199023255552"}));
  // Products that overflow (or pass 2^50 elements) are caught dimension by dimension.
  EXPECT_TRUE(Rejected(Image({{"a", {1u << 30, 1u << 30}, kF32, 0}}, 32), kLoss,
                       {"tensor 'a': the product of its dimensions passes 2^50", "dimension 1"}));
  const uint64_t big = uint64_t{1} << 40;
  EXPECT_TRUE(Rejected(Image({{"a", {big, big, big, big}, kF32, 0}}, 32), kLoss,
                       {"product of its dimensions"}));
  EXPECT_TRUE(Rejected(Image({{"a", {3, uint64_t{1} << 40, 1024}, kF32, 0}}, 32), kLoss,
                       {"product of its dimensions", "dimension 2"}));
  // Within the limits, but far more data than the file holds.
  EXPECT_TRUE(Rejected(Image({{"a", {1u << 20, 1u << 20}, kF32, 0}}, 32), kLoss,
                       {"lies outside the data section"}));
}

TEST(GgufCorruptTensorTest, UnknownTypeIds) {
  for (uint32_t type : {4u, 5u, 31u, 33u, 1000u, 0xffffffffu}) {
    EXPECT_TRUE(Rejected(Image({{"w", {32}, type, 0}}, 256), kLoss,
                         {"tensor 'w': unknown type id " + std::to_string(type)}));
  }
}

TEST(GgufCorruptTensorTest, UnsupportedTypesAreNamed) {
  const std::vector<std::pair<uint32_t, std::string>> types = {
      {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
      {23, "IQ4_XS"},  {29, "IQ1_M"},  {39, "MXFP4"},
  };
  for (const auto& [id, name] : types) {
    EXPECT_TRUE(Rejected(Image({{"blk.0.attn_q.weight", {256, 2}, id, 0}}, 4096),
                         StatusCode::kUnimplemented,
                         {"tensor 'blk.0.attn_q.weight' has type " + name,
                          "(id " + std::to_string(id) + ")", "does not support"}));
  }
}

TEST(GgufCorruptTensorTest, RowLengthNotAMultipleOfTheBlock) {
  EXPECT_TRUE(Rejected(Image({{"q", {33, 2}, kQ8_0, 0}}, 256), kLoss,
                       {"tensor 'q': row length 33 is not a multiple of Q8_0's block of 32"}));
  EXPECT_TRUE(Rejected(Image({{"k", {128}, kQ4_K, 0}}, 256), kLoss,
                       {"row length 128", "Q4_K's block of 256"}));
  // Only the row length counts: 32 x 3 is fine for Q8_0.
  EXPECT_TRUE(OpenStatus(Image({{"q", {32, 3}, kQ8_0, 0}}, 3 * 34)).ok());
}

TEST(GgufCorruptTensorTest, MisalignedOffsets) {
  EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, 4}}, 64), kLoss,
                       {"tensor 'a': data offset 4 is not a multiple of the alignment 32"}));
  EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, 0}, {"b", {8}, kF32, 32}}, 128, 64), kLoss,
                       {"tensor 'b': data offset 32", "alignment 64"}));
  EXPECT_TRUE(OpenStatus(Image({{"a", {8}, kF32, 0}, {"b", {8}, kF32, 64}}, 128, 64)).ok());
}

TEST(GgufCorruptTensorTest, OverlappingTensors) {
  EXPECT_TRUE(
      Rejected(Image({{"a", {8}, kF32, 0}, {"b", {16}, kF32, 0}}, 64), kLoss, {"overlaps tensor"}));
  EXPECT_TRUE(Rejected(Image({{"a", {16}, kF32, 0}, {"b", {8}, kF32, 32}}, 64), kLoss,
                       {"tensor 'b' at [32, 64) overlaps tensor 'a' ending at 64"}));
  // Table order does not matter: the later tensor in the data is named.
  EXPECT_TRUE(Rejected(Image({{"b", {8}, kF32, 32}, {"a", {16}, kF32, 0}}, 64), kLoss,
                       {"tensor 'b' at [32, 64) overlaps tensor 'a'"}));
  EXPECT_TRUE(OpenStatus(Image({{"b", {8}, kF32, 32}, {"a", {8}, kF32, 0}}, 64)).ok());
}

TEST(GgufCorruptTensorTest, DataOutsideTheFile) {
  EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, 64}}, 64), kLoss,
                       {"tensor 'a': data [64, 96) lies outside the data section of 64 bytes"}));
  EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, 32}}, 48), kLoss,
                       {"data [32, 64) lies outside the data section of 48 bytes"}));
  // Offsets near 2^64 must not wrap around.
  for (uint64_t offset : {~uint64_t{31}, uint64_t{1} << 63, ~uint64_t{31} - 32}) {
    EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, offset}}, 64), kLoss,
                         {"tensor 'a'", "lies outside the data section"}));
  }
}

TEST(GgufCorruptTensorTest, DuplicateTensorNames) {
  EXPECT_TRUE(Rejected(Image({{"a", {8}, kF32, 0}, {"b", {8}, kF32, 32}, {"a", {8}, kF32, 64}}, 96),
                       kLoss, {"duplicate tensor name 'a'"}));
}

// Mutations of the real stories260K file, at the tensor info of token_embd.weight.
TEST(GgufCorruptTensorTest, MutatedRealFile) {
  std::FILE* fp = std::fopen(testing::TestDataPath("models/stories260K.gguf").c_str(), "rb");
  ASSERT_NE(fp, nullptr);
  std::vector<uint8_t> real(1185376);
  ASSERT_EQ(std::fread(real.data(), 1, real.size(), fp), real.size());
  std::fclose(fp);
  ASSERT_TRUE(OpenStatus(real).ok());
  // Its info: u64 length, name, n_dims = 2, dims 64 and 512, type, offset.
  RawGguf pattern;
  pattern.Str("token_embd.weight").Put<uint32_t>(2).Put<uint64_t>(64).Put<uint64_t>(512);
  auto it = std::search(real.begin(), real.end(), pattern.bytes.begin(), pattern.bytes.end());
  ASSERT_NE(it, real.end());
  const size_t type_at = (it - real.begin()) + pattern.size();
  const size_t offset_at = type_at + 4;
  auto patched = [&](size_t at, auto value) {
    std::vector<uint8_t> out = real;
    std::memcpy(out.data() + at, &value, sizeof(value));
    return out;
  };
  EXPECT_TRUE(Rejected(patched(type_at, uint32_t{16}), StatusCode::kUnimplemented,
                       {"tensor 'token_embd.weight' has type IQ2_XXS"}));
  EXPECT_TRUE(Rejected(patched(type_at, uint32_t{77}), kLoss, {"unknown type id 77"}));
  uint64_t offset = 0;
  std::memcpy(&offset, real.data() + offset_at, 8);
  EXPECT_TRUE(Rejected(patched(offset_at, offset + 4), kLoss,
                       {"'token_embd.weight': data offset", "alignment 32"}));
  EXPECT_TRUE(Rejected(patched(offset_at, offset + 32), kLoss, {"overlaps"}));
  EXPECT_TRUE(Rejected(patched(offset_at, uint64_t{1} << 40), kLoss, {"lies outside"}));
  EXPECT_TRUE(Rejected(patched(type_at - 8, uint64_t{100000}), kLoss, {"lies outside"}));
  EXPECT_TRUE(Rejected(patched(type_at - 20, uint32_t{5}), kLoss, {"5 dimensions"}));
}

// Random byte mutations of a small file: each either opens (and its tensors lie inside the
// image) or is refused with a message; none crashes. Both outcomes must occur.
TEST(GgufCorruptTensorTest, RandomMutations) {
  const std::vector<uint8_t> base = SmallWriterImage();
  std::mt19937_64 rng(1234);
  int opened = 0, refused = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> img = base;
    int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      size_t at = rng() % img.size();
      switch (rng() % 3) {
        case 0:
          img[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          img[at] = static_cast<uint8_t>(rng());
          break;
        default:
          img.resize(at);
          break;
      }
      if (img.empty()) break;
    }
    auto f = GgufFile::OpenBuffer(img.data(), img.size());
    if (!f.ok()) {
      ++refused;
      EXPECT_FALSE(f.status().message().empty());
      continue;
    }
    ++opened;
    for (const auto& t : (*f)->tensors()) {
      ASSERT_GE(t.data, img.data());
      ASSERT_LE(t.data + t.n_bytes, img.data() + img.size());
    }
  }
  EXPECT_GT(opened, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace forge
