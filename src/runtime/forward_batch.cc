// ForwardBatch::AddSequence / Finish.
#include "runtime/forward_batch.h"

#include <algorithm>
#include <string>

namespace forge {

Status ForwardBatch::AddSequence(const std::vector<int32_t>& tokens, int32_t start_pos,
                                 const std::vector<int32_t>& blocks, Logits logits) {
  if (cu_seqlens_q.empty()) cu_seqlens_q.push_back(0);
  const int64_t ctx = int64_t{start_pos} + static_cast<int64_t>(tokens.size());
  const int64_t need = (ctx + block_size - 1) / block_size;
  if (static_cast<int64_t>(blocks.size()) < need) {
    return InvalidArgumentError("sequence of " + std::to_string(ctx) + " tokens needs " +
                                std::to_string(need) + " blocks of " + std::to_string(block_size) +
                                ", given " + std::to_string(blocks.size()));
  }
  const int32_t first = static_cast<int32_t>(token_ids.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    int32_t pos = start_pos + static_cast<int32_t>(i);
    token_ids.push_back(tokens[i]);
    positions.push_back(pos);
    slot_mapping.push_back(blocks[pos / block_size] * block_size + pos % block_size);
  }
  if (logits == Logits::kAll) {
    for (size_t i = 0; i < tokens.size(); ++i) logits_indices.push_back(first + int32_t(i));
  } else if (logits == Logits::kLast && !tokens.empty()) {
    logits_indices.push_back(first + static_cast<int32_t>(tokens.size()) - 1);
  }
  cu_seqlens_q.push_back(static_cast<int32_t>(token_ids.size()));
  seq_lens_k.push_back(static_cast<int32_t>(ctx));
  // Block tables are stored ragged here and padded by Finish().
  block_tables.insert(block_tables.end(), blocks.begin(), blocks.begin() + need);
  row_lengths_.push_back(static_cast<int32_t>(need));
  return Status::Ok();
}

void ForwardBatch::Finish() {
  int32_t width = 1;
  for (int32_t n : row_lengths_) width = std::max(width, n);
  std::vector<int32_t> padded(row_lengths_.size() * width, -1);
  size_t src = 0;
  for (size_t s = 0; s < row_lengths_.size(); ++s) {
    std::copy(block_tables.begin() + src, block_tables.begin() + src + row_lengths_[s],
              padded.begin() + s * width);
    src += row_lengths_[s];
  }
  block_tables = std::move(padded);
  max_blocks = width;
  row_lengths_.clear();
}

Status ForwardBatch::Validate(int64_t num_blocks, int64_t n_vocab) const {
  const int64_t T = n_tokens(), S = n_seqs();
  if (static_cast<int64_t>(positions.size()) != T ||
      static_cast<int64_t>(slot_mapping.size()) != T ||
      static_cast<int64_t>(cu_seqlens_q.size()) != S + 1 ||
      static_cast<int64_t>(block_tables.size()) != S * max_blocks || !row_lengths_.empty()) {
    return InvalidArgumentError("ForwardBatch: inconsistent sizes (Finish() not called?)");
  }
  if (S > 0 && (cu_seqlens_q[0] != 0 || cu_seqlens_q[S] != T)) {
    return InvalidArgumentError("ForwardBatch: cu_seqlens_q does not span the tokens");
  }
  for (int64_t i = 0; i < T; ++i) {
    if (token_ids[i] < 0 || token_ids[i] >= n_vocab) {
      return OutOfRangeError("token id " + std::to_string(token_ids[i]) +
                             " outside the vocabulary of " + std::to_string(n_vocab));
    }
    if (slot_mapping[i] >= num_blocks * block_size) {
      return OutOfRangeError("slot " + std::to_string(slot_mapping[i]) + " outside the pool of " +
                             std::to_string(num_blocks) + " blocks");
    }
  }
  for (int64_t s = 0; s < S; ++s) {
    const int64_t q = cu_seqlens_q[s + 1] - cu_seqlens_q[s];
    if (q < 0 || seq_lens_k[s] < q) {
      return InvalidArgumentError("sequence " + std::to_string(s) + ": " + std::to_string(q) +
                                  " new tokens but a context of " + std::to_string(seq_lens_k[s]));
    }
    const int64_t need = (int64_t{seq_lens_k[s]} + block_size - 1) / block_size;
    if (need > max_blocks) return InvalidArgumentError("block table too narrow");
    for (int64_t b = 0; b < need; ++b) {
      const int32_t id = block_tables[s * max_blocks + b];
      if (id < 0 || id >= num_blocks) {
        return OutOfRangeError("sequence " + std::to_string(s) + " block " + std::to_string(b) +
                               " is " + std::to_string(id) + ", outside the pool of " +
                               std::to_string(num_blocks));
      }
    }
  }
  for (int32_t idx : logits_indices) {
    if (idx < 0 || idx >= T) return OutOfRangeError("logits row " + std::to_string(idx));
  }
  return Status::Ok();
}

int64_t ForwardBatch::SingleQueries() const {
  int64_t n = 0;
  for (int64_t s = 0; s < n_seqs(); ++s) n += cu_seqlens_q[s + 1] - cu_seqlens_q[s] == 1 ? 1 : 0;
  return n;
}

int64_t ForwardBatch::LeadingSingleQueries() const {
  int64_t n = 0;
  while (n < n_seqs() && cu_seqlens_q[n + 1] - cu_seqlens_q[n] == 1) ++n;
  return n;
}

ForwardBatch ForwardBatch::SingleQueriesFirst() const {
  const int64_t S = n_seqs();
  std::vector<int64_t> order;  // old sequence indices in the new order
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t s = 0; s < S; ++s) {
      const bool single = cu_seqlens_q[s + 1] - cu_seqlens_q[s] == 1;
      if (single == (pass == 0)) order.push_back(s);
    }
  }
  ForwardBatch out;
  out.block_size = block_size;
  out.max_blocks = max_blocks;
  out.cu_seqlens_q.push_back(0);
  std::vector<int32_t> new_token(token_ids.size());  // old token index -> new
  for (int64_t s : order) {
    for (int32_t t = cu_seqlens_q[s]; t < cu_seqlens_q[s + 1]; ++t) {
      new_token[t] = static_cast<int32_t>(out.token_ids.size());
      out.token_ids.push_back(token_ids[t]);
      out.positions.push_back(positions[t]);
      out.slot_mapping.push_back(slot_mapping[t]);
    }
    out.cu_seqlens_q.push_back(static_cast<int32_t>(out.token_ids.size()));
    out.seq_lens_k.push_back(seq_lens_k[s]);
    out.block_tables.insert(out.block_tables.end(), block_tables.begin() + s * max_blocks,
                            block_tables.begin() + (s + 1) * max_blocks);
  }
  for (int32_t t : logits_indices) out.logits_indices.push_back(new_token[t]);
  return out;
}

}  // namespace forge
