// DescribeGguf and ReadTensorValues: what `forge inspect` prints, including for files whose
// well-known keys have the wrong type (found by the fuzzer: DescribeGguf aborted on them).
#include "gguf/gguf_inspect.h"

#include <gtest/gtest.h>

#include <cstring>

#include "gguf/gguf_raw_image.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::RawGguf;

TEST(GgufInspectTest, WrongTypedWellKnownKeys) {
  // The fuzzer's input, reduced: general.architecture holds a u8, general.alignment 64.
  RawGguf g;
  g.Header(0, 3).Key("general.architecture", GgufType::kU8).Put<uint8_t>(7);
  g.KvU32("general.alignment", 64).Key("tokenizer.ggml.model", GgufType::kI32).Put<int32_t>(-1);
  auto f = GgufFile::OpenBuffer(g.bytes.data(), g.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::string text = DescribeGguf(**f);
  EXPECT_NE(text.find("(not a string: 7)"), std::string::npos) << text;
  EXPECT_EQ(text.find("tokenizer "), std::string::npos) << text;
  EXPECT_NE(text.find("tensors: 0"), std::string::npos) << text;
}

TEST(GgufInspectTest, DescribesTheRealModel) {
  auto f = GgufFile::Open(testing::TestDataPath("models/stories260K-q8_0.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::string text = DescribeGguf(**f);
  for (const char* want : {"architecture", "llama", "vocab size", "512", "Q8_0", "F32",
                           "blk.0.attn_q.weight", "chat template"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  }
  InspectOptions no_table;
  no_table.show_tensors = false;
  no_table.show_metadata = true;
  std::string short_text = DescribeGguf(**f, no_table);
  EXPECT_EQ(short_text.find("tensor table:"), std::string::npos);
  EXPECT_NE(short_text.find("general.file_type = 7"), std::string::npos) << short_text;
}

TEST(GgufInspectTest, ReadTensorValues) {
  GgufWriter w;
  std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  ASSERT_TRUE(w.AddTensor("t", GgmlType::kF32, {3, 2}, bytes).ok());
  auto buf = w.WriteToBuffer();
  ASSERT_TRUE(buf.ok());
  auto f = GgufFile::OpenBuffer(buf->data(), buf->size());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*ReadTensorValues(**f, "t", 4), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f}));
  EXPECT_EQ(*ReadTensorValues(**f, "t", 100), values);  // clipped to the tensor
  EXPECT_TRUE(ReadTensorValues(**f, "t", 0)->empty());
  EXPECT_EQ(ReadTensorValues(**f, "u", 4).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadTensorValues(**f, "t", -1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace forge
