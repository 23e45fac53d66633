// BpeModel: ranked merges over symbol ids. Encodes one pre-tokenized piece by repeatedly merging
// the adjacent pair of lowest rank (leftmost first), as Hugging Face's BPE and llama.cpp do, in
// time linear in the piece however long it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/merge_chain.h"
#include "tokenizer/vocab.h"

namespace forge {

class BpeModel {
 public:
  // byte_encode: pieces are raw bytes written through the GPT-2 byte mapping (gpt2); otherwise
  // pieces are UTF-8 and unknown bytes fall back to <0xNN> tokens (gemma4).
  static StatusOr<BpeModel> Build(const Vocab& vocab, bool byte_encode, bool ignore_merges);

  // Appends the ids of one piece (raw text, not yet byte-mapped).
  void EncodePiece(std::string_view piece, std::vector<TokenId>* out) const;
  size_t num_merges() const { return num_merges_; }
  // Pieces of up to this many symbols merge by scanning an array, longer ones through a queue
  // (MergeQueue: a heap, or rank buckets past the long-piece limit). Pieces of more than two
  // chunks merge chunk by chunk when that provably gives the same result (merge_chain.h), else
  // whole. All give the same result; tests set the limits to compare them (chunk 0: no windows).
  void set_small_piece_limit(size_t symbols) { small_piece_limit_ = symbols; }
  void set_long_piece_limit(size_t symbols) { long_piece_limit_ = symbols; }
  // Windows: chunk symbols each, run with lookahead more (merge_chain.h).
  void set_windows(size_t chunk, size_t lookahead) {
    chunk_symbols_ = chunk;
    window_lookahead_ = lookahead;
  }

 private:
  // One slot of the open-addressing merge table: (left, right) -> rank and merged symbol.
  struct MergeSlot {
    uint64_t key = kEmptyKey;
    int32_t rank = 0;
    int32_t result = 0;  // symbol id of the merged pair
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};
  struct Symbol {
    int32_t id;           // symbol id: a vocab id, an id past the vocab (a merge-only string) or -1
    uint32_t begin, end;  // byte range in the piece
    int32_t prev, next;   // linked list over live symbols; -1 at the ends
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t SlotOf(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> table_shift_; }
  const MergeSlot* FindMerge(int32_t left, int32_t right) const;
  void AddMerge(uint64_t key, int32_t rank, int32_t result);
  int32_t SymbolOf(std::string_view text) const;
  int32_t InternSymbol(const std::string& text);
  void InitialSymbols(std::string_view piece, std::vector<Symbol>* symbols) const;
  void Merge(std::vector<Symbol>* symbols) const;
  void MergeSmall(std::vector<Symbol>* symbols) const;
  // The queue's merge loop; fills *log when not null. False when the keys it popped did not only
  // increase (then windows cannot be proven exact).
  bool MergeRun(std::vector<Symbol>* symbols, MergeLog* log) const;
  // Merges a long piece window by window and appends its ids; false (nothing appended) when some
  // window edge cannot be proven exact.
  bool EncodeChunked(std::string_view piece, const std::vector<Symbol>& symbols,
                     std::vector<TokenId>* out) const;
  void EmitSymbols(std::string_view piece, const std::vector<Symbol>& symbols,
                   std::vector<TokenId>* out) const;
  void EmitFallback(std::string_view bytes, std::vector<TokenId>* out) const;

  const Vocab* vocab_ = nullptr;
  bool byte_encode_ = true;
  bool ignore_merges_ = false;
  int32_t n_vocab_ = 0;
  TokenIndex extra_index_;        // merge-only strings -> ids from n_vocab_
  std::vector<MergeSlot> table_;  // power-of-two size, at most half full
  int table_shift_ = 64;
  size_t num_merges_ = 0;
  size_t small_piece_limit_ = 32;
  size_t long_piece_limit_ = 1024;
  size_t chunk_symbols_ = 2048;
  size_t window_lookahead_ = 256;
  int32_t byte_symbol_[256];     // byte_encode: the symbol of each raw byte
  TokenId fallback_token_[256];  // !byte_encode: the <0xNN> token of each byte, or -1
};

}  // namespace forge
