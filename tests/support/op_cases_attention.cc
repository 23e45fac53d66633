// The op harness's attention table (op_cases.h): ragged batches over scattered blocks mixing
// decode tokens, prefill chunks and empty sequences; GQA ratios 1 to 32; head dims 8 to 256;
// lengths that straddle blocks and the prefill kernels' 64- and 128-query tiles; many sequences;
// decode rows ahead of prefill chunks (n_single); block sizes 1 to 256; non-causal (encoders: up
// to 512 tokens a sequence); q inside wider rows.
#include "support/op_cases.h"

namespace forge::testing {

const std::vector<AttentionCase>& AttentionCases() {
  static const std::vector<AttentionCase> kCases = [] {
    std::vector<AttentionCase> c = {
        {8, 8, 64, {{0, 1}}},
        {8, 2, 80, {{15, 1}, {0, 17}, {16, 16}}, {.q_f32 = true}},
        {32, 4, 128, {{100, 1}, {33, 1}, {0, 5}}},
        {32, 4, 128, {{100, 1}, {33, 1}, {0, 5}}, {.q_f32 = true, .n_single = 2}},
        {4, 4, 96, {{7, 13}, {0, 7}}, {.q_f32 = true}},
        {8, 1, 8, {{1000, 1}, {5, 300}}},
        {4, 2, 256, {{40, 3}}, {.q_f32 = true}},
        {6, 3, 200, {{17, 2}, {0, 0}, {3, 1}}},
        // Many query and key tiles; tiles that straddle sequences; empty and decode sequences.
        {16, 4, 128, {{40, 300}}, {.q_f32 = true}},
        {8, 8, 64, {{0, 1}, {0, 63}, {3, 64}, {0, 65}, {20, 130}}},
        {8, 1, 64, {{9, 1}, {0, 0}, {64, 63}, {0, 64}, {1, 65}, {0, 130}}, {.q_f32 = true}},
        {4, 4, 80, {{0, 130}, {16, 65}, {0, 64}, {30, 0}, {5, 63}, {0, 1}}},
        {16, 2, 80, {{0, 1}, {0, 63}, {0, 64}, {63, 65}, {2, 130}}, {.q_f32 = true}},
        {8, 8, 96, {{0, 65}, {0, 1}, {7, 130}, {0, 63}, {0, 64}}},
        {8, 1, 96, {{100, 130}, {0, 64}, {0, 65}, {1, 1}, {0, 63}}, {.q_f32 = true}},
        // Decode batches: the split-KV kernel's splits and merges, up to 16 query heads a KV head
        // (32: only the generic kernel).
        {8, 2, 128, {{4999, 1}}, {.q_f32 = true}},
        {16, 1, 64, {{2047, 1}, {0, 1}, {300, 1}}},
        {32, 1, 64, {{40, 1}, {7, 1}}, {.q_f32 = true}},
        // Decode rows ahead of prefill chunks, as the model orders a mixed step.
        {32, 8, 128, {{50, 1}, {200, 1}, {0, 40}, {16, 100}}, {.q_f32 = true, .n_single = 2}},
        {16, 2, 80, {{30, 1}, {0, 1}, {5, 64}}, {.n_single = 2}},
        {8, 8, 96, {{3, 1}, {0, 70}}, {.q_f32 = true, .n_single = 1}},
        {8, 2, 64, {{10, 1}, {20, 1}, {0, 33}}, {.n_single = 2}},
        // Other block sizes; not causal; q inside the rows of a [T, q | k | v] buffer.
        {8, 2, 128, {{20, 40}, {0, 1}}, {.block_size = 32}},
        {4, 4, 80, {{10, 30}, {0, 1}}, {.q_f32 = true, .block_size = 1}},
        {16, 4, 96, {{3, 100}, {0, 129}, {64, 65}}, {.block_size = 24}},
        {8, 1, 64, {{100, 1}, {300, 1}, {2, 1}}, {.q_f32 = true, .block_size = 256}},
        {4, 4, 64, {{0, 50}, {20, 30}}, {.causal = false}},
        {8, 2, 128, {{0, 130}, {5, 1}}, {.q_f32 = true, .causal = false}},
        {8, 2, 64, {{10, 20}, {0, 1}}, {.q_pad = 2 * 2 * 64}},
        {32, 8, 128, {{70, 1}, {3, 1}}, {.q_f32 = true, .q_pad = 2 * 8 * 128}},
        // Gemma: soft-capped scores, sliding windows (shorter and longer than the keys, across
        // blocks and chunks), head dim 256; decode rows and prefill chunks.
        {8, 2, 256, {{40, 3}, {5, 70}}, {.q_f32 = true, .softcap = 5.0f, .window = 16}},
        {8, 4, 64, {{100, 1}, {30, 1}, {2, 1}}, {.window = 8}},
        {4, 4, 128, {{0, 50}, {20, 1}}, {.q_f32 = true, .softcap = 1.0f}},
        {16, 8, 256, {{300, 1}, {20, 1}, {0, 40}}, {.q_f32 = true, .n_single = 2, .window = 64}},
        {8, 2, 80, {{7, 33}, {0, 130}}, {.block_size = 32, .window = 1000}},
        {4, 2, 128, {{30, 1}, {0, 20}}, {.q_f32 = true, .window = 1}},
        {4, 1, 256, {{40, 9}, {3, 1}, {0, 17}}, {.q_f32 = true, .softcap = 30.0f, .window = 17}},
        {8, 4, 128, {{200, 60}, {100, 1}}, {.q_f32 = true, .window = 128}},
        {4, 2, 256, {{1100, 1}, {900, 140}}, {.q_f32 = true, .window = 1024}},
    };
    // Encoders (BERT): not causal, whole sequences of 1 to 512 tokens (an empty one, one over a
    // cached prefix) at head dims 32 (the generic kernel), 64 and 128 (the prefill kernels where
    // q is F32), MHA and GQA 2 to 8; the first four small enough for the host backends.
    const AttentionCase::Options nc = {.causal = false}, nc_f32 = {.q_f32 = true, .causal = false};
    c.push_back({4, 4, 32, {{0, 1}, {0, 13}, {0, 200}, {0, 64}}, nc});
    c.push_back({2, 1, 32, {{0, 1}, {0, 7}, {0, 40}}, nc_f32});
    c.push_back({4, 1, 64, {{0, 37}, {0, 1}, {0, 100}}, nc_f32});
    c.push_back({2, 2, 128, {{0, 33}, {0, 1}, {0, 5}, {0, 130}}, nc_f32});
    c.push_back({12, 12, 32, {{0, 512}, {0, 1}, {0, 129}, {0, 300}, {0, 0}, {0, 64}}, nc_f32});
    c.push_back({8, 2, 32, {{0, 384}, {0, 2}, {0, 127}}, nc});
    c.push_back({6, 6, 64, {{0, 512}, {0, 65}, {0, 1}, {0, 255}}, nc_f32});
    c.push_back({4, 1, 64, {{0, 129}, {0, 511}, {3, 61}}, nc});
    c.push_back({4, 4, 128, {{0, 512}, {0, 1}, {0, 200}}, nc_f32});
    c.push_back({8, 1, 128, {{0, 300}, {0, 64}, {10, 1}}, nc_f32});
    c.push_back({16, 4, 128, {{0, 130}, {0, 1}, {0, 77}}, nc});
    // One query a sequence (the decode kernel: a lone query sees all its keys either way).
    c.push_back({8, 2, 128, {{0, 1}, {40, 1}, {7, 1}}, nc_f32});
    // More than 32 sequences (the prefill kernels look for their tile 32 sequences at a time):
    // decode tokens around two prefill chunks; and 64 decode sequences of GQA 4.
    AttentionCase many{8, 2, 64, {}};
    for (int s = 0; s < 40; ++s) many.seqs.push_back({s % 7 * 5, s == 17 ? 70 : s == 33 ? 2 : 1});
    c.push_back(many);
    AttentionCase decodes{32, 8, 128, {}, {.q_f32 = true}};
    for (int s = 0; s < 64; ++s) decodes.seqs.push_back({s * 37 % 500, 1});
    c.push_back(decodes);
    return c;
  }();
  return kCases;
}

}  // namespace forge::testing
