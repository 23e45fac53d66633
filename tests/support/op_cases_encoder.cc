// The op harness's tables of the encoder ops (op_cases.h): LayerNorm over BERT's widths (384,
// 768, 1024) and odd ones (33, 1000), past what a block keeps in registers (5000, 16392), with
// every combination of its options and shifted means; pooling over ragged batches of 1 to 512
// tokens a sequence, empty sequences among them, rows of 32 to 1024 (and 33, 1000).
#include "support/op_cases.h"

namespace forge::testing {

const std::vector<LayerNormCase>& LayerNormCases() {
  static const std::vector<LayerNormCase> kCases = [] {
    std::vector<LayerNormCase> c;
    // The 16 combinations of delta, bias, in place and cast cycle over the shapes; add_row on
    // every third.
    int k = 0;
    for (int64_t dim : {32, 33, 384, 768, 1000, 1024, 4096}) {
      for (int64_t rows : {1, 7, 300}) {
        const bool add_row = c.size() % 3 == 1;
        c.push_back(
            {rows, dim, (k & 1) != 0, (k & 2) != 0, (k & 4) != 0, (k & 8) != 0, 0.0f, add_row});
        k = (k + 5) % 16;  // 5 is prime to 16: every combination within 16 shapes
      }
    }
    // BERT's post-norm (x + sublayer, bias, in place, cast for the next matmul) and embedding
    // norms (learned positions in delta and the token type's row; the row alone) at its widths.
    c.push_back({128, 768, true, true, true, true});
    c.push_back({33, 384, true, true, true, true, 0.0f, true});
    c.push_back({33, 768, false, true, true, true, 0.0f, true});
    // Rows longer than the registers hold (the kernels' second loop), in place and apart.
    c.push_back({3, 5000, true, true, true, true, 0.0f, true});
    c.push_back({2, 16392, true, false, false, true});
    // Means far from 0 against the spread (the first mean's rounding).
    c.push_back({33, 1000, true, true, false, true, 30.0f});
    c.push_back({7, 4096, false, true, true, false, 100.0f});
    return c;
  }();
  return kCases;
}

const std::vector<PoolCase>& PoolCases() {
  static const std::vector<PoolCase> kCases = [] {
    std::vector<PoolCase> c = {
        {{1, 7, 512, 0, 33}, 32},        {{3, 17}, 33}, {{512, 1, 100}, 1024},
        {{5, 129, 64, 300, 2, 13}, 384}, {{1}, 768},    {{0}, 64},
        {{256, 255, 257}, 1000},
    };
    PoolCase many{{}, 128};  // many sequences of 1 to 37 tokens
    for (int s = 0; s < 40; ++s) many.lens.push_back(1 + s * 11 % 37);
    c.push_back(many);
    return c;
  }();
  return kCases;
}

}  // namespace forge::testing
