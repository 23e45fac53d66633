// Test weights in the ten GGUF block formats: random bytes with finite scales (every bit pattern
// of the quants), rows quantized by Forge's CPU quantizer, and llama.cpp's bytes from
// ../shared/testdata/quant, with the CPU reference dequantization of each.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "gguf/gguf_file.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "support/test_env.h"

namespace forge::testing {

inline const std::vector<GgmlType>& QuantFormats() {
  static const std::vector<GgmlType> kFormats = {
      GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
      GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  return kFormats;
}

inline bool IsKQuantType(GgmlType t) { return GetTypeTraits(t).block_elems == 256; }

// Byte offsets of the F16 scale fields (d, dmin / m) in a block of the type.
inline std::vector<int> ScaleOffsets(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      return {0, 2};
    case GgmlType::kQ2_K:
      return {80, 82};
    case GgmlType::kQ3_K:
      return {108};
    case GgmlType::kQ6_K:
      return {208};
    default:
      return {0};
  }
}

// A stored matrix [n rows][k] of `type` with its CPU-dequantized values.
struct QuantMatrix {
  GgmlType type = GgmlType::kQ4_0;
  int64_t n = 0, k = 0, row_bytes = 0;
  std::vector<uint8_t> bytes;  // [n][row_bytes]
  std::vector<float> values;   // [n][k], DequantizeRow of each row
  std::string what;
};

inline void Dequantize(QuantMatrix* q) {
  q->values.assign(q->n * q->k, 0.0f);
  for (int64_t r = 0; r < q->n; ++r) {
    ASSERT_TRUE(DequantizeRow(q->type, q->bytes.data() + r * q->row_bytes,
                              q->values.data() + r * q->k, q->k)
                    .ok());
  }
}

// Random bytes, each block's scales set to finite F16 values of either sign in [2^-8, 2^-4].
inline QuantMatrix RandomBlocks(GgmlType type, int64_t n, int64_t k, uint64_t seed) {
  QuantMatrix q;
  q.type = type;
  q.n = n;
  q.k = k;
  q.row_bytes = RowBytes(type, k).value();
  q.what = std::string(TypeName(type)) + " random bytes [" + std::to_string(n) + ", " +
           std::to_string(k) + "]";
  q.bytes.resize(n * q.row_bytes);
  std::mt19937_64 rng(seed);
  for (auto& b : q.bytes) b = static_cast<uint8_t>(rng());
  const TypeTraits& tt = GetTypeTraits(type);
  std::uniform_real_distribution<float> expo(-8.0f, -4.0f);
  for (int64_t blk = 0; blk < n * k / tt.block_elems; ++blk) {
    for (int off : ScaleOffsets(type)) {
      const float v = std::exp2(expo(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
      const uint16_t h = F32ToF16(v);
      std::memcpy(q.bytes.data() + blk * tt.block_bytes + off, &h, 2);
    }
  }
  Dequantize(&q);
  return q;
}

// Normal(0, 1) values quantized row by row with QuantizeRow.
inline QuantMatrix QuantizedRandom(GgmlType type, int64_t n, int64_t k, uint64_t seed) {
  QuantMatrix q;
  q.type = type;
  q.n = n;
  q.k = k;
  q.row_bytes = RowBytes(type, k).value();
  q.what = std::string(TypeName(type)) + " quantized [" + std::to_string(n) + ", " +
           std::to_string(k) + "]";
  q.bytes.resize(n * q.row_bytes);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(k);
  for (int64_t r = 0; r < n; ++r) {
    for (auto& x : row) x = dist(rng);
    EXPECT_TRUE(QuantizeRow(type, row.data(), q.bytes.data() + r * q.row_bytes, k).ok());
  }
  Dequantize(&q);
  return q;
}

// A tensor of ../shared/testdata/quant/quant-oracle-<type>.gguf (llama-quantize's bytes).
inline bool OracleMatrix(GgmlType type, const std::string& tensor, QuantMatrix* q) {
  std::string name(TypeName(type));
  for (auto& c : name) c = static_cast<char>(std::tolower(c));
  auto f = GgufFile::Open(TestDataPath("quant/quant-oracle-" + name + ".gguf"));
  if (!f.ok()) return false;
  const GgufTensorInfo* t = (*f)->FindTensor(tensor);
  if (t == nullptr || t->type != type || t->dims.size() != 2) return false;
  q->type = type;
  q->k = t->dims[0];
  q->n = t->dims[1];
  q->row_bytes = RowBytes(type, q->k).value();
  q->bytes.assign(t->data, t->data + q->n * q->row_bytes);
  q->what = "quant-oracle-" + name + " " + tensor;
  Dequantize(q);
  return true;
}

}  // namespace forge::testing
