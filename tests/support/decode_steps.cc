// DecodeSteps.
#include "support/decode_steps.h"

#include <gtest/gtest.h>

namespace forge::testing {

std::vector<std::vector<float>> DecodeSteps(ModelRunner& model, KvCache& cache, int n, int steps,
                                            bool batched) {
  const int64_t V = model.config().n_vocab;
  const int bs = 16, per_seq = 16;  // 256 tokens per sequence
  std::vector<std::vector<int32_t>> tables(n);
  std::vector<int> len(n);
  std::vector<float> logits;
  for (int s = 0; s < n; ++s) {
    tables[s].resize(per_seq);
    for (int b = 0; b < per_seq; ++b) tables[s][b] = (b * n + s) * 1;  // interleaved blocks
    len[s] = 5 + 23 * s;
    ForwardBatch b;
    b.block_size = bs;
    std::vector<int32_t> prompt(len[s]);
    for (int i = 0; i < len[s]; ++i) prompt[i] = static_cast<int32_t>((i * 97 + s * 31 + 13) % V);
    EXPECT_TRUE(b.AddSequence(prompt, 0, tables[s]).ok());
    b.Finish();
    EXPECT_TRUE(model.Forward(b, cache, &logits).ok());
  }
  std::vector<std::vector<float>> out(n);
  for (int step = 0; step < steps; ++step) {
    auto token = [&](int s) { return static_cast<int32_t>((step * 31 + s * 7 + 1) % V); };
    if (batched) {
      ForwardBatch b;
      b.block_size = bs;
      for (int s = 0; s < n; ++s) EXPECT_TRUE(b.AddSequence({token(s)}, len[s], tables[s]).ok());
      b.Finish();
      Status st = model.Forward(b, cache, &logits);
      EXPECT_TRUE(st.ok()) << st.ToString();
      for (int s = 0; s < n; ++s) {
        out[s].insert(out[s].end(), logits.begin() + s * V, logits.begin() + (s + 1) * V);
      }
    } else {
      for (int s = 0; s < n; ++s) {
        ForwardBatch b;
        b.block_size = bs;
        EXPECT_TRUE(b.AddSequence({token(s)}, len[s], tables[s]).ok());
        b.Finish();
        EXPECT_TRUE(model.Forward(b, cache, &logits).ok());
        out[s].insert(out[s].end(), logits.begin(), logits.end());
      }
    }
    for (int s = 0; s < n; ++s) ++len[s];
  }
  return out;
}

}  // namespace forge::testing
