// The op harness's matmul table (op_cases.h): every stored format at row counts 1 to 512 over
// the shapes each kernel has edges at (partial tiles and units, one and several row groups, long
// and narrow matrices, llama.cpp's bytes, views and strides), and the dense weights' shapes.
#include <utility>

#include "backend/cuda/quant_test_data.h"
#include "support/op_cases.h"

namespace forge::testing {
namespace {

using W = MatmulCase::Weights;

// k of the one-row DP4A GEMV's forms: a whole number of its chunks and more than one (Q2_K:
// 1024-element chunks, Q3_K and Q6_K: 2048, the rest: 256).
int64_t Dp4aK(GgmlType t) {
  if (t == GgmlType::kQ2_K) return 3072;
  if (t == GgmlType::kQ3_K || t == GgmlType::kQ6_K) return 4096;
  return 1280;
}
int64_t Dp4aSmallK(GgmlType t) {
  if (t == GgmlType::kQ2_K) return 1024;
  if (t == GgmlType::kQ3_K || t == GgmlType::kQ6_K) return 2048;
  return 768;
}

MatmulCase Outliers(MatmulCase c) {
  c.outliers = true;
  return c;
}

void AddBlockFormat(GgmlType t, std::vector<MatmulCase>* c) {
  const bool kq = IsKQuantType(t);
  // k of 3 super-blocks, or 3 legacy blocks (a partial tile and unit); every row bucket.
  c->push_back(
      {t, 33, kq ? 768 : 96, {1, 2, 3, 8, 9, 16, 17, 32, 33, 64, 65, 256, 512}, W::kRandomBlocks});
  // 129 rows: a partial 128-row tile; k = 2048: the tensor-core matmul's Q6_K unit; legacy 800:
  // a unit of one block.
  c->push_back({t,
                129,
                kq ? 2048 : 800,
                {1, 2, 3, 8, 16, 17, 32, 33, 64, 65, 100, 128, 129, 256},
                W::kQuantized});
  c->push_back({t, 300, 4096, {1, 8, 17, 65, 256}, W::kRandomBlocks});
  c->push_back({t, 7, 14336, {1, 2, 3, 8, 16}, W::kQuantized});
  c->push_back({t, 4097, 4096, {1, 16}, W::kRandomBlocks});
  c->push_back({t, 0, 0, {1, 3, 16, 17, 64, 512}, W::kOracle});
  // A view from row 1 (not 16-byte aligned in most formats), x and out strides past the row ends.
  c->push_back({.type = t,
                .n = 39,
                .k = kq ? 512 : 352,
                .ms = {1, 5, 70},
                .weights = W::kRandomBlocks,
                .bias = false,
                .first_row = 1,
                .x_pad = 40,
                .out_pad = 3});
  // The one-row GEMV's forms, with outlier activations: many row groups a warp, narrow matrices
  // whose chunks several warps split, a partial 16-row group (the register GEMV's rows too).
  c->push_back(Outliers({t, 5003, Dp4aK(t), {1}, W::kRandomBlocks}));
  c->push_back(Outliers({t, 1000, 4096, {1}, W::kRandomBlocks, false}));
  c->push_back(Outliers({t, 72, Dp4aSmallK(t), {1, 8, 9, 16, 17, 32}, W::kRandomBlocks}));
  c->push_back(Outliers({t, 9, t == GgmlType::kQ5_K ? 4096 : 14336, {1}, W::kQuantized, false}));
}

}  // namespace

const std::vector<MatmulCase>& MatmulCases() {
  static const std::vector<MatmulCase> kCases = [] {
    std::vector<MatmulCase> c;
    // F32 weights (converted to F16 / BF16 for those activations), then F16 and BF16 weights
    // (used as stored in their own dtype): 1 to 8 rows take the GEMV, more cuBLAS.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 7}, {64, 256}, {13, 4096}, {1000, 96}}) {
      c.push_back({GgmlType::kF32, n, k, {1, 2, 3, 8, 17, 64, 512}});
    }
    for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16}) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 16}, {13, 64}, {1000, 96}, {256, 4096}}) {
        c.push_back({t, n, k, {1, 3, 8, 9, 17, 64, 300}});
      }
    }
    for (GgmlType t : QuantFormats()) AddBlockFormat(t, &c);
    // Every format at small shapes: k of two blocks (13 for the dense types), n from 5 (the
    // normalized error of a single output is its relative error, which a dot product near zero
    // makes as large as it likes).
    for (GgmlType t : SupportedTypes()) {
      if (t == GgmlType::kQ8_K) continue;  // an activation format, not a weight format
      const int64_t block = GetTypeTraits(t).block_elems;
      for (int64_t n : {5, 13, 64}) {
        c.push_back({t, n, block == 1 ? 13 : 2 * block, {1, 2, 3, 7, 17}});
      }
    }
    return c;
  }();
  return kCases;
}

}  // namespace forge::testing
