// The op harness's tables of the ops around the matmuls and attention (op_cases.h): odd sizes
// (5, 7, 13, 33), the model shapes (head dims 8 to 256, rows of 4096 to 16392), the kernels' edges
// (16-byte rows or not, 256 tokens and more), strides, slices and skipped slots.
#include "support/op_cases.h"

#include "backend/cuda/quant_test_data.h"

namespace forge::testing {

const std::vector<EmbeddingCase>& EmbeddingCases() {
  static const std::vector<EmbeddingCase> kCases = [] {
    std::vector<EmbeddingCase> c = {
        {GgmlType::kF32, 50, 33, {3, 0, 49, 3, 17}},
        {GgmlType::kF16, 50, 33, {3, 0, 49, 3, 17}},
        {GgmlType::kBF16, 64, 4096, {0, 63, 5, 5}},
        // Tensor-parallel shards: rows [10, 40) of a vocabulary of 80; other ids give zeros.
        {GgmlType::kF32, 30, 33, {0, 9, 10, 39, 40, 79, 25}, 10, 80},
        {GgmlType::kQ8_0, 30, 256, {79, 10, 39, 0, 25}, 10, 80},
        // Scaled rows (Gemma).
        {GgmlType::kBF16, 40, 320, {0, 39, 7}, 0, 0, 17.888544f},
        {GgmlType::kQ8_0, 30, 256, {79, 10, 0}, 10, 80, 16.0f},
    };
    for (GgmlType t : QuantFormats()) c.push_back({t, 37, 256, {0, 36, 3, 3, 17}});
    return c;
  }();
  return kCases;
}

// 5: the element-wise kernels; 64, 80, 4096: 16-byte units; 16392: beyond them; 96 rows of 128:
// the per-head q/k norm.
const std::vector<NormCase>& NormCases() {
  static const std::vector<NormCase> kCases = [] {
    std::vector<NormCase> c;
    for (int64_t dim : {5, 64, 80, 4096}) {
      for (int64_t rows : {1, 7, 33}) c.push_back({rows, dim});
    }
    c.push_back({7, 16392});
    c.push_back({96, 128});
    return c;
  }();
  return kCases;
}

// Both styles on every head dim, with and without Llama 3.1's frequency factors and linear
// scaling; a partial rotation; q inside the rows of a [T, q | k | v] buffer; large positions.
const std::vector<RopeCase>& RopeCases() {
  static const std::vector<RopeCase> kCases = [] {
    std::vector<RopeCase> c;
    for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
      for (int64_t hd : {8, 64, 80, 96, 128, 256}) {
        const bool scaled = hd % 32 == 0;
        c.push_back({style, 13, 4, hd, 0, 0, 500000.0f, scaled ? 0.5f : 1.0f, scaled});
      }
      c.push_back({style, 7, 8, 128, 64, 0, 10000.0f, 1.0f, false});
      c.push_back({style, 21, 32, 128, 0, 2 * 8 * 128, 500000.0f, 1.0f, true});
    }
    c.push_back({RopeStyle::kNeox, 300, 2, 64, 0, 0, 1000000.0f, 1.0f, false});
    return c;
  }();
  return kCases;
}

const std::vector<KvWriteCase>& KvWriteCases() {
  static const std::vector<KvWriteCase> kCases = {
      {1, 8, 64, 64},        {33, 2, 80, 130, 0, true}, {300, 4, 128, 512},
      {13, 1, 8, 32, 8 * 8}, {5, 3, 200, 96, 0, true},  {7, 8, 128, 48, 2 * 4096, true},
  };
  return kCases;
}

// 21 tokens: blocks of 4 heads; 260: a block takes all of a token's heads (from 256 tokens).
const std::vector<RopeKvWriteCase>& RopeKvWriteCases() {
  static const std::vector<RopeKvWriteCase> kCases = [] {
    std::vector<RopeKvWriteCase> c;
    for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
      c.push_back({style, 8, 2, 64, 21});
      c.push_back({style, 4, 4, 80, 21});
      c.push_back({style, 32, 8, 128, 21});
      c.push_back({style, 4, 1, 8, 21});
      c.push_back({style, 32, 8, 128, 260});
      c.push_back({style, 4, 4, 80, 130});
    }
    c.push_back({RopeStyle::kNeox, 8, 4, 128, 9, 64});
    return c;
  }();
  return kCases;
}

// Rows of 300 take the element-wise kernel, multiples of 8 the 16-byte one (296: a partial block;
// 4104 at 130 tokens: several blocks a row); stacked: gate and up interleaved by rows.
const std::vector<SwigluCase>& SwigluCases() {
  static const std::vector<SwigluCase> kCases = {
      {9, 300, false}, {9, 296, false},   {130, 4104, true},
      {3, 64, true},   {1, 14336, false}, {5, 7, false},
      // GeGLU (Gemma): the same kernels with the tanh GELU.
      {9, 300, false, GluAct::kGeluTanh}, {130, 4104, true, GluAct::kGeluTanh},
      {1, 2048, false, GluAct::kGeluTanh},
      // The exact (erf) GELU, gated.
      {9, 300, false, GluAct::kGeluErf}, {130, 4104, true, GluAct::kGeluErf},
      {1, 2048, false, GluAct::kGeluErf},
      // Ungated, out = act(gate) (BERT's FFN: exact GELU over 4 x 768 and 4 x 384); stacked: the
      // gate's rows inside rows of twice its width.
      {33, 3072, false, GluAct::kGeluErf, false}, {9, 1536, true, GluAct::kGeluErf, false},
      {9, 300, false, GluAct::kGeluErf, false},   {5, 7, false, GluAct::kSilu, false},
      {3, 64, true, GluAct::kSilu, false},        {9, 296, false, GluAct::kGeluTanh, false},
      {1, 14336, false, GluAct::kGeluTanh, false},
  };
  return kCases;
}

const std::vector<AddCase>& AddCases() {
  static const std::vector<AddCase> kCases = {
      {1, false},   {5, true},     {7, false},       {13, false},
      {1000, true}, {4099, false}, {1 << 20, false}, {(1 << 20) + 3, true},
  };
  return kCases;
}

// Logit rows (soft-capped in place, Gemma 2): a few values, a vocabulary's row, several rows.
const std::vector<SoftCapCase>& SoftCapCases() {
  static const std::vector<SoftCapCase> kCases = {{7, 0.5f}, {32000, 30.0f}, {3 * 4099, 2.0f}};
  return kCases;
}

// Mixtral (8, top 2), Qwen2-MoE (60, top 4), Qwen3-MoE (128, top 8) and gpt-oss (32, top 4:
// softmax of the chosen) shapes; sigmoid with a selection bias; the limits (512 experts, k 32).
const std::vector<RouteCase>& RouteCases() {
  static const std::vector<RouteCase> kCases = {
      {1, 8, 2, ExpertGating::kSoftmax, true},
      {37, 128, 8, ExpertGating::kSoftmax, true},
      {5, 60, 4, ExpertGating::kSoftmax, false},
      {9, 32, 4, ExpertGating::kSoftmaxTopK, false},
      {17, 256, 8, ExpertGating::kSigmoid, true, true, 2.5f},
      {3, 512, 32, ExpertGating::kSoftmax, true},
      {300, 7, 7, ExpertGating::kSoftmax, true},
  };
  return kCases;
}

const std::vector<ExpertSumCase>& ExpertSumCases() {
  static const std::vector<ExpertSumCase> kCases = {
      {1, 8, 64}, {37, 8, 2048, true, true}, {5, 2, 33, true, false}, {130, 4, 100}};
  return kCases;
}

const std::vector<GatherRowsCase>& GatherRowsCases() {
  static const std::vector<GatherRowsCase> kCases = {
      {5, 33, {4, 1}},
      {1, 1, {0}},
      {50, 4096, {49, 0, 7, 7, 3}},
      {300, 129, {299, 5, 17, 0, 150, 151, 2, 2, 9, 298, 100, 33, 64, 65, 1, 250, 7}},
  };
  return kCases;
}

}  // namespace forge::testing
