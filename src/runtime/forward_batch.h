// ForwardBatch: everything one forward call needs about the tokens it runs: several sequences
// of different lengths (prefill chunks and single decode tokens mixed), their positions, where
// their K/V go (slot mapping) and which blocks hold their context (block tables).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace forge {

struct ForwardBatch {
  std::vector<int32_t> token_ids;     // [n_tokens], sequences one after another
  std::vector<int32_t> positions;     // [n_tokens]
  std::vector<int32_t> cu_seqlens_q;  // [n_seqs + 1]: sequence s owns tokens [cu[s], cu[s+1])
  std::vector<int32_t> seq_lens_k;    // [n_seqs]: context length after this step
  std::vector<int32_t> block_tables;  // [n_seqs, max_blocks], -1 padded
  int32_t max_blocks = 0;
  std::vector<int32_t> slot_mapping;    // [n_tokens]: block * block_size + offset
  std::vector<int32_t> logits_indices;  // token rows whose logits are wanted, in output order
  int32_t block_size = 16;

  int64_t n_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t n_seqs() const { return static_cast<int64_t>(seq_lens_k.size()); }

  // Appends sequence tokens at positions [start_pos, start_pos + tokens.size()) whose blocks are
  // `blocks` (covering the whole context). want_logits: "last" (the last token), "all" or "none".
  enum class Logits { kNone, kLast, kAll };
  Status AddSequence(const std::vector<int32_t>& tokens, int32_t start_pos,
                     const std::vector<int32_t>& blocks, Logits logits = Logits::kLast);
  // Pads block tables to a common width; call after the last AddSequence.
  void Finish();
  // Checks every index against the pool and the vocabulary on the host, before any backend reads
  // it: lengths, block ids, slots, logits rows and token ids.
  Status Validate(int64_t num_blocks, int64_t n_vocab) const;

  // The sequences with one query token each (decode steps), and how many of them lead the batch.
  int64_t SingleQueries() const;
  int64_t LeadingSingleQueries() const;
  // This (finished) batch with its one-query sequences moved ahead of the others, each group in
  // its order; logits_indices keep their order and point at the moved tokens, so the logits rows
  // come out as before.
  ForwardBatch SingleQueriesFirst() const;

 private:
  std::vector<int32_t> row_lengths_;  // blocks per sequence until Finish()
};

}  // namespace forge
