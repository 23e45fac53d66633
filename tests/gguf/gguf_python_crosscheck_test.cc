// Cross-check against an independent reader: tests/gguf/gguf_reader.py (Python, stdlib only,
// written from the GGUF spec) reads files made by GgufWriter and the real files in
// shared/testdata; every key, value and tensor must match what was written / what we read.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "gguf/gguf_file.h"
#include "gguf/gguf_split.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace forge {
namespace {

using nlohmann::json;

struct PyResult {
  int exit_code = -1;
  json out;
  std::string stdout_text;
};

PyResult RunPythonReader(const std::string& path) {
  std::string cmd = "python3 '" + std::string(FORGE_SOURCE_DIR) + "/tests/gguf/gguf_reader.py' '" +
                    path + "' 2>&1";
  PyResult r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.stdout_text.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.exit_code == 0) r.out = json::parse(r.stdout_text, nullptr, /*allow_exceptions=*/false);
  return r;
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string Hex(const std::string& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool IsSigned(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

// Compares one value with the Python reader's JSON for it, recursively.
void ExpectSame(const GgufValue& v, const json& j, const std::string& where) {
  ASSERT_TRUE(j.is_object()) << where;
  ASSERT_EQ(j["type"], std::string(GgufTypeName(v.type()))) << where;
  switch (v.type()) {
    case GgufType::kF32:
      EXPECT_EQ(j["bits"].get<uint32_t>(), std::bit_cast<uint32_t>(static_cast<float>(v.f64())))
          << where;
      break;
    case GgufType::kF64:
      EXPECT_EQ(j["bits"].get<uint64_t>(), std::bit_cast<uint64_t>(v.f64())) << where;
      break;
    case GgufType::kBool:
      EXPECT_EQ(j["value"].get<bool>(), v.boolean()) << where;
      break;
    case GgufType::kString:
      EXPECT_EQ(j["hex"].get<std::string>(), Hex(v.str())) << where;
      break;
    case GgufType::kArray: {
      ASSERT_EQ(j["elem"], std::string(GgufTypeName(v.elem_type()))) << where;
      ASSERT_EQ(j["items"].size(), v.items().size()) << where;
      for (size_t i = 0; i < v.items().size(); ++i) {
        ExpectSame(v.items()[i], j["items"][i], where + "[" + std::to_string(i) + "]");
      }
      break;
    }
    default:
      if (IsSigned(v.type())) {
        EXPECT_EQ(j["value"].get<int64_t>(), v.i64()) << where;
      } else {
        EXPECT_EQ(j["value"].get<uint64_t>(), v.u64()) << where;
      }
  }
}

std::vector<std::pair<std::string, GgufValue>> EveryValueType() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto arr = [](GgufType t, std::vector<GgufValue> items) { return GgufValue::Array(t, items); };
  return {
      {"u8", GgufValue::U8(255)},
      {"i8", GgufValue::I8(-128)},
      {"u16", GgufValue::U16(65535)},
      {"i16", GgufValue::I16(-32768)},
      {"u32", GgufValue::U32(4294967295u)},
      {"i32", GgufValue::I32(std::numeric_limits<int32_t>::min())},
      {"u64", GgufValue::U64(std::numeric_limits<uint64_t>::max())},
      {"i64", GgufValue::I64(std::numeric_limits<int64_t>::min())},
      {"f32", GgufValue::F32(-0.0f)},
      {"f32.nan", GgufValue::F32(nan)},
      {"f32.inf", GgufValue::F32(-inf)},
      {"f32.small", GgufValue::F32(1e-45f)},
      {"f64", GgufValue::F64(4.9e-324)},
      {"f64.pi", GgufValue::F64(3.141592653589793)},
      {"bool.true", GgufValue::Bool(true)},
      {"bool.false", GgufValue::Bool(false)},
      {"str.empty", GgufValue::String("")},
      {"str.utf8", GgufValue::String("h\xc3\xa9llo \xe2\x96\x81 \xf0\x9f\x98\x80")},
      {"str.nul", GgufValue::String(std::string("a\0b\n\"", 5))},
      {"str.long", GgufValue::String(std::string(1000, 'x'))},
      {"arr.u8", arr(GgufType::kU8, {GgufValue::U8(0), GgufValue::U8(200)})},
      {"arr.i8", arr(GgufType::kI8, {GgufValue::I8(-1)})},
      {"arr.u16", arr(GgufType::kU16, {GgufValue::U16(1), GgufValue::U16(2)})},
      {"arr.i16", arr(GgufType::kI16, {GgufValue::I16(-3)})},
      {"arr.u32", arr(GgufType::kU32, {GgufValue::U32(7)})},
      {"arr.i32", GgufValue::I32Array({1, -2, 3})},
      {"arr.u64", arr(GgufType::kU64, {GgufValue::U64(uint64_t{1} << 63)})},
      {"arr.i64", arr(GgufType::kI64, {GgufValue::I64(-5)})},
      {"arr.f32", GgufValue::F32Array({1.5f, nan, -inf})},
      {"arr.f64", arr(GgufType::kF64, {GgufValue::F64(-2.5)})},
      {"arr.bool", arr(GgufType::kBool, {GgufValue::Bool(true), GgufValue::Bool(false)})},
      {"arr.str", GgufValue::StringArray({"<unk>", "", "\xe2\x96\x81the"})},
      {"arr.empty", arr(GgufType::kString, {})},
      {"arr.nested", arr(GgufType::kArray, {GgufValue::I32Array({1}), arr(GgufType::kI32, {}),
                                            GgufValue::I32Array({2, 3})})},
      {"arr.deep", arr(GgufType::kArray, {arr(GgufType::kArray, {GgufValue::StringArray({"z"})})})},
  };
}

struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;
  size_t n_bytes;  // spelled out here, not computed by the code under test
};

TEST(GgufPythonCrossCheckTest, WriterMatchesIndependentReader) {
  const std::vector<TensorSpec> tensors = {
      {"f32", GgmlType::kF32, {5}, 20},         {"f16", GgmlType::kF16, {7, 3}, 42},
      {"bf16", GgmlType::kBF16, {4, 2, 2}, 32}, {"q8_0", GgmlType::kQ8_0, {64, 3}, 6 * 34},
      {"q4_0", GgmlType::kQ4_0, {32}, 18},      {"q4_k", GgmlType::kQ4_K, {256, 2}, 2 * 144},
      {"q6_k", GgmlType::kQ6_K, {256}, 210},    {"q2_k", GgmlType::kQ2_K, {256, 1, 1, 2}, 2 * 84},
  };
  std::mt19937 rng(7);
  for (uint32_t version : {2u, 3u}) {
    for (uint32_t alignment : {32u, 64u, 16u}) {
      SCOPED_TRACE("version " + std::to_string(version) + " alignment " +
                   std::to_string(alignment));
      GgufWriter w(version, alignment);
      std::vector<std::pair<std::string, GgufValue>> expected;
      if (alignment != 32) expected.emplace_back("general.alignment", GgufValue::U32(alignment));
      for (auto& kv : EveryValueType()) {
        w.Set(kv.first, kv.second);
        expected.push_back(kv);
      }
      std::vector<std::vector<uint8_t>> data;
      for (const TensorSpec& t : tensors) {
        std::vector<uint8_t> bytes(t.n_bytes);
        for (auto& b : bytes) b = static_cast<uint8_t>(rng());
        ASSERT_TRUE(w.AddTensor(t.name, t.type, t.dims, bytes).ok()) << t.name;
        data.push_back(std::move(bytes));
      }
      std::string path = testing::TempDir() + "/every.gguf";
      ASSERT_TRUE(w.WriteFile(path).ok());

      PyResult py = RunPythonReader(path);
      ASSERT_EQ(py.exit_code, 0) << py.stdout_text;
      const json& j = py.out;
      ASSERT_TRUE(j.is_object()) << py.stdout_text.substr(0, 500);
      EXPECT_EQ(j["version"], version);
      EXPECT_EQ(j["alignment"], alignment);
      ASSERT_EQ(j["metadata"].size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(j["metadata"][i]["key"], expected[i].first);
        ExpectSame(expected[i].second, j["metadata"][i]["value"], expected[i].first);
      }
      ASSERT_EQ(j["tensors"].size(), tensors.size());
      uint64_t offset = 0, end = 0;
      for (size_t i = 0; i < tensors.size(); ++i) {
        const json& t = j["tensors"][i];
        SCOPED_TRACE(tensors[i].name);
        EXPECT_EQ(t["name"], tensors[i].name);
        EXPECT_EQ(t["dims"].get<std::vector<int64_t>>(), tensors[i].dims);
        EXPECT_EQ(t["type"], static_cast<uint32_t>(tensors[i].type));
        EXPECT_EQ(t["offset"], offset);
        EXPECT_EQ(t["n_bytes"], tensors[i].n_bytes);
        EXPECT_EQ(t["crc32"], Crc32(data[i].data(), data[i].size()));
        end = offset + tensors[i].n_bytes;
        offset = (end + alignment - 1) / alignment * alignment;
      }
      EXPECT_EQ(j["data_offset"].get<uint64_t>() % alignment, 0u);
      EXPECT_EQ(j["file_size"], j["data_offset"].get<uint64_t>() + end);
    }
  }
}

// Our reader and the Python reader see the same real files.
TEST(GgufPythonCrossCheckTest, RealFilesReadAlike) {
  for (const char* name :
       {"models/stories260K.gguf", "models/stories260K-f16.gguf", "models/stories260K-q8_0.gguf",
        "quant/quant-oracle-q4_k_m.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    SCOPED_TRACE(name);
    std::string path = testing::TestDataPath(name);
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const GgufFile& g = **f;
    PyResult py = RunPythonReader(path);
    ASSERT_EQ(py.exit_code, 0) << py.stdout_text.substr(0, 500);
    const json& j = py.out;
    EXPECT_EQ(j["version"], g.version());
    EXPECT_EQ(j["alignment"], g.alignment());
    ASSERT_EQ(j["metadata"].size(), g.metadata().size());
    for (size_t i = 0; i < g.metadata().size(); ++i) {
      EXPECT_EQ(j["metadata"][i]["key"], g.metadata()[i].first);
      ExpectSame(g.metadata()[i].second, j["metadata"][i]["value"], g.metadata()[i].first);
    }
    ASSERT_EQ(j["tensors"].size(), g.tensors().size());
    for (size_t i = 0; i < g.tensors().size(); ++i) {
      const GgufTensorInfo& t = g.tensors()[i];
      const json& p = j["tensors"][i];
      EXPECT_EQ(p["name"], t.name);
      EXPECT_EQ(p["dims"].get<std::vector<int64_t>>(), t.dims) << t.name;
      EXPECT_EQ(p["type"], static_cast<uint32_t>(t.type)) << t.name;
      EXPECT_EQ(p["offset"], t.offset) << t.name;
      EXPECT_EQ(p["n_bytes"], t.n_bytes) << t.name;
      EXPECT_EQ(j["data_offset"].get<uint64_t>() + t.offset, t.file_offset) << t.name;
      EXPECT_EQ(p["crc32"], Crc32(t.data, t.n_bytes)) << t.name;
    }
    if (std::string(name) == "models/stories260K.gguf") {
      EXPECT_EQ(j["data_offset"], 14176);  // SOURCE.md
      EXPECT_EQ(j["tensors"].size(), 48u);
    }
  }
}

// Split files are plain GGUF files with the split keys, readable one by one.
TEST(GgufPythonCrossCheckTest, SplitFilesReadAlone) {
  auto model = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(model.ok());
  auto paths = WriteGgufSplits(**model, testing::TempDir() + "/s", {.n_splits = 3});
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  size_t total = 0;
  for (size_t s = 0; s < paths->size(); ++s) {
    PyResult py = RunPythonReader((*paths)[s]);
    ASSERT_EQ(py.exit_code, 0) << py.stdout_text.substr(0, 500);
    std::map<std::string, json> kv;
    for (const json& e : py.out["metadata"]) kv[e["key"]] = e["value"];
    EXPECT_EQ(kv["split.no"]["type"], "u16");
    EXPECT_EQ(kv["split.no"]["value"], s);
    EXPECT_EQ(kv["split.count"]["value"], 3);
    EXPECT_EQ(kv["split.tensors.count"]["type"], "i32");
    EXPECT_EQ(kv["split.tensors.count"]["value"], 48);
    EXPECT_EQ(kv.count("general.architecture"), s == 0 ? 1u : 0u);
    total += py.out["tensors"].size();
  }
  EXPECT_EQ(total, 48u);
}

// The Python reader itself refuses a bad file (so that agreement above means something).
TEST(GgufPythonCrossCheckTest, IndependentReaderRefusesCorruptFile) {
  std::string path = testing::TempDir() + "/bad.gguf";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("GGUF\x04", f);
  std::fclose(f);
  PyResult py = RunPythonReader(path);
  EXPECT_EQ(py.exit_code, 1);
  EXPECT_NE(py.stdout_text.find("truncated"), std::string::npos) << py.stdout_text;
}

}  // namespace
}  // namespace forge
