// Weight formats against independent oracles in ../shared/testdata: llama.cpp-quantized files
// with gguf-py's dequantized values (quant/), llama.cpp's quantizer bytes, and stories260K in
// F32, F16 and Q8_0 (models/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/half.h"
#include "gguf/gguf_file.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "support/test_env.h"

namespace forge {
namespace {

const std::vector<std::string> kOracleFiles = {
    "quant-oracle-f32.gguf",  "quant-oracle-q4_0.gguf", "quant-oracle-q4_1.gguf",
    "quant-oracle-q5_0.gguf", "quant-oracle-q5_1.gguf", "quant-oracle-q8_0.gguf",
    "quant-oracle-q2_k.gguf", "quant-oracle-q3_k.gguf", "quant-oracle-q4_k.gguf",
    "quant-oracle-q5_k.gguf", "quant-oracle-q6_k.gguf", "quant-oracle-q4_k_m.gguf"};

const nlohmann::json& Expected() {
  static const nlohmann::json* expected = [] {
    std::ifstream in(testing::TestDataPath("quant/quant-oracle.expected.json"));
    auto* j = new nlohmann::json(nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false));
    return j;
  }();
  return *expected;
}

std::unique_ptr<GgufFile> OpenOrDie(const std::string& relative) {
  auto f = GgufFile::Open(testing::TestDataPath(relative));
  EXPECT_TRUE(f.ok()) << relative << ": " << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

std::vector<float> Dequantize(const GgufTensorInfo& t) {
  std::vector<float> out(t.n_elements);
  Status st = DequantizeRow(t.type, t.data, out.data(), t.n_elements);
  EXPECT_TRUE(st.ok()) << t.name << ": " << st.ToString();
  return out;
}

TEST(QuantOracleTest, ExpectedJsonListsEveryFile) {
  const nlohmann::json& e = Expected();
  ASSERT_TRUE(e.is_object()) << "quant-oracle.expected.json did not parse";
  EXPECT_EQ(e["format"], "quant-oracle v1");
  EXPECT_EQ(e["files"].size(), kOracleFiles.size());
  for (const std::string& f : kOracleFiles) EXPECT_TRUE(e["files"].contains(f)) << f;
}

class QuantOracleFileTest : public ::testing::TestWithParam<std::string> {};

// Every tensor: its type and shape, first64 bit for bit, and the float64 sum and sum of squares
// of all values to rounding (the oracle summed in another order).
TEST_P(QuantOracleFileTest, DequantizesLikeGgufPy) {
  const std::string& file = GetParam();
  const nlohmann::json& e = Expected();
  ASSERT_TRUE(e.is_object() && e["files"].contains(file));
  const nlohmann::json& tensors = e["files"][file]["tensors"];
  auto f = OpenOrDie("quant/" + file);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tensors().size(), tensors.size());
  int checked = 0;
  std::map<std::string, int> by_type;
  for (const auto& [name, want] : tensors.items()) {
    SCOPED_TRACE(file + " " + name);
    const GgufTensorInfo* t = f->FindTensor(name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(TypeName(t->type), want["type"].get<std::string>());
    EXPECT_EQ(t->dims, want["ne"].get<std::vector<int64_t>>());
    std::vector<float> v = Dequantize(*t);
    const auto first64 = want["first64"].get<std::vector<double>>();
    ASSERT_EQ(first64.size(), 64u);
    int mismatches = 0;
    for (int i = 0; i < 64; ++i) {
      const float w = static_cast<float>(first64[i]);
      if (FloatBits(v[i]) != FloatBits(w) && mismatches++ < 4) {
        ADD_FAILURE() << "value " << i << ": got " << v[i] << ", expected " << w;
      }
    }
    EXPECT_EQ(mismatches, 0);
    double sum = 0, sumsq = 0, sumabs = 0;
    for (float x : v) {
      sum += x;
      sumsq += static_cast<double>(x) * x;
      sumabs += std::fabs(x);
    }
    // Reordering a float64 sum of n terms moves it by at most ~n * 2^-53 * sum|x|.
    const double tol = 1e-12 + static_cast<double>(v.size()) * 2.3e-16 * sumabs;
    EXPECT_NEAR(sum, want["sum"].get<double>(), tol);
    EXPECT_NEAR(sumsq, want["sumsq"].get<double>(), 1e-12 + v.size() * 2.3e-16 * sumsq);
    ++checked;
    ++by_type[std::string(TypeName(t->type))];
  }
  std::string summary;
  for (const auto& [type, n] : by_type) summary += " " + type + " x" + std::to_string(n);
  std::printf("[ oracle   ] %s: %d tensors match (%s )\n", file.c_str(), checked, summary.c_str());
  EXPECT_EQ(checked, 12);
}

INSTANTIATE_TEST_SUITE_P(EveryFile, QuantOracleFileTest, ::testing::ValuesIn(kOracleFiles),
                         [](const auto& info) {
                           std::string n = info.param.substr(13);  // after "quant-oracle-"
                           n = n.substr(0, n.size() - 5);          // drop ".gguf"
                           return n;
                         });

// llama.cpp's Q4_0..Q8_0 quantizers are deterministic: quantizing the F32 model's matrices must
// give the bytes llama-quantize --pure wrote.
TEST(QuantOracleTest, LegacyQuantizersMatchLlamaCppBytes) {
  auto f32 = OpenOrDie("quant/quant-oracle-f32.gguf");
  ASSERT_NE(f32, nullptr);
  for (const char* type_name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}) {
    auto q = OpenOrDie(std::string("quant/quant-oracle-") + type_name + ".gguf");
    ASSERT_NE(q, nullptr);
    const GgmlType type = *ParseTypeName(type_name);
    int matrices = 0;
    for (const GgufTensorInfo& t : q->tensors()) {
      if (t.type == GgmlType::kF32) continue;
      SCOPED_TRACE(std::string(type_name) + " " + t.name);
      ASSERT_EQ(t.type, type);
      const GgufTensorInfo* src = f32->FindTensor(t.name);
      ASSERT_NE(src, nullptr);
      ASSERT_EQ(src->n_elements, t.n_elements);
      std::vector<uint8_t> bytes(t.n_bytes, 0xAB);
      ASSERT_TRUE(
          QuantizeRow(type, reinterpret_cast<const float*>(src->data), bytes.data(), t.n_elements)
              .ok());
      const int64_t block = GetTypeTraits(type).block_bytes;
      int64_t first_diff = -1, diffs = 0;
      for (int64_t b = 0; b < t.n_bytes / block; ++b) {
        if (std::memcmp(bytes.data() + b * block, t.data + b * block, block) != 0) {
          if (first_diff < 0) first_diff = b;
          ++diffs;
        }
      }
      EXPECT_EQ(diffs, 0) << diffs << " blocks differ, the first is block " << first_diff;
      ++matrices;
    }
    EXPECT_EQ(matrices, 9) << type_name;
  }
}

// stories260K: the F16 file (llama-quantize) holds exactly the F32 values rounded to nearest
// even; the Q8_0 file (tools/to_q8_0.py) is within Q8_0's rounding of them, block by block, and
// equals Forge's own Q8_0 quantization byte for byte.
TEST(QuantOracleTest, Stories260KF16AndQ8_0WithinRoundingOfF32) {
  auto f32 = OpenOrDie("models/stories260K.gguf");
  auto f16 = OpenOrDie("models/stories260K-f16.gguf");
  auto q8 = OpenOrDie("models/stories260K-q8_0.gguf");
  ASSERT_TRUE(f32 && f16 && q8);
  int n_f16 = 0, n_q8 = 0;
  for (const GgufTensorInfo& ref : f32->tensors()) {
    SCOPED_TRACE(ref.name);
    ASSERT_EQ(ref.type, GgmlType::kF32);
    const float* x = reinterpret_cast<const float*>(ref.data);
    for (const GgufFile* file : {f16.get(), q8.get()}) {
      const GgufTensorInfo* t = file->FindTensor(ref.name);
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(t->dims, ref.dims);
      std::vector<float> v = Dequantize(*t);
      if (t->type == GgmlType::kF32) {
        EXPECT_EQ(std::memcmp(v.data(), x, v.size() * 4), 0);
      } else if (t->type == GgmlType::kF16) {
        ++n_f16;
        for (int64_t i = 0; i < ref.n_elements; ++i) {
          ASSERT_EQ(FloatBits(v[i]), FloatBits(F16ToF32(F32ToF16(x[i])))) << "element " << i;
          // Half an F16 ulp: 2^-11 relative (normal range), 2^-25 absolute (subnormal).
          ASSERT_LE(std::fabs(v[i] - x[i]), std::max(std::fabs(x[i]) * 0x1p-11f, 0x1p-25f));
        }
      } else {
        ASSERT_EQ(t->type, GgmlType::kQ8_0);
        ++n_q8;
        for (int64_t b = 0; b < ref.n_elements / 32; ++b) {
          float amax = 0;
          for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
          // d = amax/127 stored in F16 (rel. error <= 2^-11): |error| <= d/2 + 127 * |d - d16|.
          const float bound = amax * (1.0f / 254 + 0x1p-11f) * 1.0001f;
          for (int j = 0; j < 32; ++j) {
            ASSERT_LE(std::fabs(v[32 * b + j] - x[32 * b + j]), bound) << "element " << 32 * b + j;
          }
        }
        std::vector<uint8_t> mine(t->n_bytes);
        ASSERT_TRUE(QuantizeRow(GgmlType::kQ8_0, x, mine.data(), ref.n_elements).ok());
        EXPECT_EQ(std::memcmp(mine.data(), t->data, t->n_bytes), 0);
      }
    }
  }
  EXPECT_EQ(n_f16, 37);
  EXPECT_EQ(n_q8, 32);
}

}  // namespace
}  // namespace forge
