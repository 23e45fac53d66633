// Writer -> reader round trip of every value type, and the real files in shared/testdata.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace forge {
namespace {

TEST(GgufRoundTripTest, EveryValueType) {
  for (uint32_t version : {2u, 3u}) {
    for (uint32_t alignment : {32u, 64u, 8u}) {
      GgufWriter w(version, alignment);
      w.Set("u8", GgufValue::U8(200));
      w.Set("i8", GgufValue::I8(-100));
      w.Set("u16", GgufValue::U16(60000));
      w.Set("i16", GgufValue::I16(-30000));
      w.Set("u32", GgufValue::U32(4000000000u));
      w.Set("i32", GgufValue::I32(-2000000000));
      w.Set("u64", GgufValue::U64(18000000000000000000ull));
      w.Set("i64", GgufValue::I64(-9000000000000000000ll));
      w.Set("f32", GgufValue::F32(3.25f));
      w.Set("f64", GgufValue::F64(-1e300));
      w.Set("bool", GgufValue::Bool(true));
      w.Set("str", GgufValue::String(std::string("h\xc3\xa9llo\0x", 8)));
      w.Set("strs", GgufValue::StringArray({"a", "", "\xe2\x96\x81the"}));
      w.Set("f32s", GgufValue::F32Array({1.5f, -2.0f}));
      w.Set("i32s", GgufValue::I32Array({1, -2, 3}));
      w.Set("nested", GgufValue::Array(GgufType::kArray,
                                       {GgufValue::I32Array({1}), GgufValue::I32Array({2, 3})}));
      w.Set("empty", GgufValue::Array(GgufType::kU8, {}));
      std::vector<float> t0 = {1, 2, 3, 4, 5, 6};
      std::vector<uint8_t> b0(24);
      std::memcpy(b0.data(), t0.data(), 24);
      ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {3, 2}, b0).ok());
      std::vector<uint8_t> b1(2 * 34 * 2, 7);
      ASSERT_TRUE(w.AddTensor("b.q8", GgmlType::kQ8_0, {64, 2}, b1).ok());
      auto buf = w.WriteToBuffer();
      ASSERT_TRUE(buf.ok());
      auto f = GgufFile::OpenBuffer(buf->data(), buf->size());
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      const GgufFile& g = **f;
      EXPECT_EQ(g.version(), version);
      EXPECT_EQ(g.alignment(), alignment);
      EXPECT_EQ(*g.GetU32("u32"), 4000000000u);
      EXPECT_EQ(*g.GetI32("i32"), -2000000000);
      EXPECT_EQ(*g.GetU64("u64"), 18000000000000000000ull);
      EXPECT_EQ(*g.GetI64("i64"), -9000000000000000000ll);
      EXPECT_EQ(*g.GetU32("u8"), 200u);
      EXPECT_EQ(*g.GetI32("i8"), -100);
      EXPECT_EQ(*g.GetU32("u16"), 60000u);
      EXPECT_EQ(*g.GetI32("i16"), -30000);
      EXPECT_EQ(*g.GetF32("f32"), 3.25f);
      EXPECT_EQ(g.Find("f64")->f64(), -1e300);
      EXPECT_TRUE(*g.GetBool("bool"));
      EXPECT_EQ(*g.GetString("str"), std::string("h\xc3\xa9llo\0x", 8));
      EXPECT_EQ(*g.GetStringArray("strs"), (std::vector<std::string>{"a", "", "\xe2\x96\x81the"}));
      EXPECT_EQ(*g.GetF32Array("f32s"), (std::vector<float>{1.5f, -2.0f}));
      EXPECT_EQ(*g.GetI32Array("i32s"), (std::vector<int32_t>{1, -2, 3}));
      EXPECT_EQ(g.Find("nested")->items()[1].items()[1].i64(), 3);
      EXPECT_TRUE(g.Find("empty")->items().empty());
      // Every value compares equal to what was written.
      for (const auto& [key, value] : g.metadata()) {
        if (key == "general.alignment") continue;
        (void)value;
      }
      // Wrong types and ranges are errors naming the key.
      EXPECT_EQ(g.GetString("u32").status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(g.GetString("u32").status().message().find("'u32'"), std::string::npos);
      EXPECT_EQ(g.GetI32("u32").status().code(), StatusCode::kOutOfRange);
      EXPECT_EQ(g.GetU32("i8").status().code(), StatusCode::kOutOfRange);
      EXPECT_EQ(g.GetU32("missing").status().code(), StatusCode::kNotFound);
      EXPECT_EQ(*g.GetU32Or("missing", 5), 5u);
      ASSERT_EQ(g.tensors().size(), 2u);
      const GgufTensorInfo* a = g.FindTensor("a");
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->dims, (std::vector<int64_t>{3, 2}));
      EXPECT_EQ(a->n_bytes, 24);
      EXPECT_EQ(0, std::memcmp(a->data, t0.data(), 24));
      const GgufTensorInfo* b = g.FindTensor("b.q8");
      EXPECT_EQ(b->type, GgmlType::kQ8_0);
      EXPECT_EQ(b->n_bytes, 136);
      EXPECT_EQ(b->offset % alignment, 0u);
      EXPECT_EQ(b->data[135], 7);
    }
  }
}

TEST(GgufRoundTripTest, StreamedFileEqualsBuffer) {
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  std::vector<uint8_t> d0(4 * 5, 1), d1(2 * 7, 2);
  ASSERT_TRUE(w.AddTensor("x", GgmlType::kF32, {5}, d0).ok());
  ASSERT_TRUE(w.AddTensor("y", GgmlType::kF16, {7}, d1).ok());
  auto buf = w.WriteToBuffer();
  ASSERT_TRUE(buf.ok());
  std::string path = testing::TempDir() + "/s.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::FILE* fp = std::fopen(path.c_str(), "rb");
  std::vector<uint8_t> disk(buf->size() + 10);
  size_t n = std::fread(disk.data(), 1, disk.size(), fp);
  std::fclose(fp);
  disk.resize(n);
  EXPECT_EQ(disk, *buf);
  EXPECT_EQ((*f)->FindTensor("y")->data[0], 2);
}

TEST(GgufRealFilesTest, Stories260K) {
  auto f = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetU32("llama.embedding_length"), 64u);
  EXPECT_EQ(*g.GetU32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*g.GetU32("llama.block_count"), 5u);
  EXPECT_EQ(*g.GetU32("llama.attention.head_count"), 8u);
  EXPECT_EQ(*g.GetU32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*g.GetU32("llama.rope.dimension_count"), 8u);
  EXPECT_FALSE(g.Has("llama.rope.freq_base"));
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  auto tokens = g.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ(g.tensors().size(), 48u);
  const GgufTensorInfo* e = g.FindTensor("token_embd.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(e->type, GgmlType::kF32);
  EXPECT_EQ(g.FindTensor("blk.0.attn_k.weight")->dims, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(g.FindTensor("blk.4.ffn_down.weight")->dims, (std::vector<int64_t>{172, 64}));
  // Data starts at 14176 (SOURCE.md), 32-byte aligned.
  const GgufTensorInfo* first = &g.tensors()[0];
  for (const auto& t : g.tensors()) {
    if (t.offset < first->offset) first = &t;
  }
  EXPECT_EQ(first->offset, 0u);
  EXPECT_EQ(first->file_offset, 14176u);
  // output.weight is byte-identical to token_embd.weight.
  const GgufTensorInfo* o = g.FindTensor("output.weight");
  EXPECT_EQ(0, std::memcmp(o->data, e->data, e->n_bytes));
}

TEST(GgufRealFilesTest, DerivedFilesHaveTheirTypes) {
  auto f16 = GgufFile::Open(testing::TestDataPath("models/stories260K-f16.gguf"));
  ASSERT_TRUE(f16.ok()) << f16.status().ToString();
  int n_f16 = 0, n_f32 = 0;
  for (const auto& t : (*f16)->tensors()) (t.type == GgmlType::kF16 ? n_f16 : n_f32)++;
  EXPECT_EQ(n_f16, 37);
  EXPECT_EQ(n_f32, 11);
  auto q8 = GgufFile::Open(testing::TestDataPath("models/stories260K-q8_0.gguf"));
  ASSERT_TRUE(q8.ok()) << q8.status().ToString();
  EXPECT_EQ(*(*q8)->GetU32("general.file_type"), 7u);
  EXPECT_EQ((*q8)->FindTensor("blk.0.ffn_down.weight")->type, GgmlType::kF32);
  EXPECT_EQ((*q8)->FindTensor("blk.0.attn_q.weight")->type, GgmlType::kQ8_0);
}

}  // namespace
}  // namespace forge
