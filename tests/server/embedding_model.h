// Test helpers (header-only) for embedding models: a small synthetic qwen3 file that embeds (its
// GGUF's qwen3.pooling_type set), and an oracle for its vectors from the dense reference forward
// (tests/support/dense_forward.h), which shares no code with Forge's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_value.h"
#include "modelgen/model_maker.h"
#include "support/dense_forward.h"
#include "support/gguf_rewrite.h"

namespace forge::testing {

inline constexpr uint32_t kMeanPooling = 1, kLastPooling = 3;

// SmallSpec's qwen3 (2 blocks, width 64, vocabulary 300) with tied embeddings, written to
// dir/<name>.gguf with qwen3.pooling_type = pooling; returns the path.
inline std::string MakeEmbeddingModel(const std::string& dir, const std::string& name,
                                      uint32_t pooling) {
  ModelSpec spec = SmallSpec("qwen3", 2);
  spec.tied_embeddings = true;
  const std::string base = dir + "/" + name + "-generator.gguf";
  auto made = MakeModel(spec, base);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return RewriteGguf(base, dir + "/" + name + ".gguf",
                     {{"qwen3.pooling_type", GgufValue::U32(pooling)}});
}

// How far `vector` (Forge's embedding of `ids` from the file at `path`, a MakeEmbeddingModel) is
// from the dense forward's. With tied embeddings the dense logits are E h (E = token_embd,
// [n_vocab, n_embd], full column rank), linear in the final hidden state h; so E x vector must be
// a positive multiple of the pooled logits m (the mean of every position's row, or the last
// row): the result is max |m - s E vector| / max |m| with s the least-squares scale, or infinity
// when s <= 0 (a vector pointing the other way).
inline double PooledResidual(const std::string& path, const std::vector<int32_t>& ids,
                             const std::vector<float>& vector, uint32_t pooling) {
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << path;
  if (!file.ok()) return std::numeric_limits<double>::infinity();
  const GgufTensorInfo* embd = (*file)->FindTensor("token_embd.weight");
  EXPECT_TRUE(embd != nullptr && embd->type == GgmlType::kF32);
  if (embd == nullptr) return std::numeric_limits<double>::infinity();
  const int64_t width = embd->dims[0], n_vocab = embd->rows();
  EXPECT_EQ(static_cast<int64_t>(vector.size()), width);
  if (static_cast<int64_t>(vector.size()) != width) return std::numeric_limits<double>::infinity();
  DenseSpec spec{.layers = {{}, {}}, .neox = true, .qk_norm = true};
  const std::vector<double> logits = DenseForward(**file, ids, spec);
  const size_t n = ids.size();
  std::vector<double> m(n_vocab, 0.0);
  for (size_t t = pooling == kLastPooling ? n - 1 : 0; t < n; ++t) {
    for (int64_t j = 0; j < n_vocab; ++j) m[j] += logits[t * n_vocab + j];
  }
  const float* e = reinterpret_cast<const float*>(embd->data);
  std::vector<double> u(n_vocab, 0.0);
  for (int64_t j = 0; j < n_vocab; ++j) {
    for (int64_t k = 0; k < width; ++k) u[j] += double(e[j * width + k]) * vector[k];
  }
  double um = 0, uu = 0, top = 0;
  for (int64_t j = 0; j < n_vocab; ++j) {
    um += u[j] * m[j];
    uu += u[j] * u[j];
  }
  const double s = uu > 0 ? um / uu : 0;
  if (!(s > 0)) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t j = 0; j < n_vocab; ++j) {
    worst = std::max(worst, std::abs(m[j] - s * u[j]));
    top = std::max(top, std::abs(m[j]));
  }
  return worst / top;
}

}  // namespace forge::testing
