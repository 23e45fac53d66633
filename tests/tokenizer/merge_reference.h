// Naive reference merges for the model tests, written from the algorithms' definitions and
// sharing nothing with src/tokenizer's models: strings in a vector, and each step scans every
// adjacent pair for the one to merge. Quadratic; for pieces of a few thousand bytes.
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/vocab.h"

namespace forge::testing {

// The merges both references share: while some adjacent pair can merge, the pair of least
// cost(left, right) (nullopt: it cannot) merges, leftmost first on ties. Then each final string
// becomes its token, or fallback(string, &ids) when it is not one.
template <typename Cost, typename Fallback>
std::vector<TokenId> NaiveMerge(const Vocab& vocab, std::vector<std::string> s, Cost cost,
                                Fallback fallback) {
  while (s.size() > 1) {
    int best = -1;
    double best_cost = 0;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const std::optional<double> c = cost(s[i], s[i + 1]);
      if (c && (best < 0 || *c < best_cost)) {
        best_cost = *c;
        best = static_cast<int>(i);
      }
    }
    if (best < 0) break;
    s[best] += s[best + 1];
    s.erase(s.begin() + best + 1);
  }
  std::vector<TokenId> ids;
  for (const std::string& t : s) {
    const TokenId id = vocab.Find(t);
    if (id != kNoToken) {
      ids.push_back(id);
    } else {
      fallback(t, &ids);
    }
  }
  return ids;
}

// Byte-level BPE (GPT-2 byte mapping): the adjacent pair whose "left right" line comes first in
// tokenizer.ggml.merges merges, leftmost first on ties; a final string that is not a token
// becomes the tokens of its bytes.
class NaiveBpe {
 public:
  explicit NaiveBpe(const Vocab& vocab) : vocab_(vocab) {
    for (size_t i = 0; i < vocab.merges.size(); ++i) {
      const std::string& line = vocab.merges[i];
      const size_t space = line.find(' ', 1);
      if (space == std::string::npos) continue;
      rank_.emplace(line.substr(0, space) + '\n' + line.substr(space + 1), static_cast<int>(i));
    }
  }

  std::vector<TokenId> Encode(std::string_view piece) const {
    std::vector<std::string> s;
    for (char ch : piece) s.push_back(byte_unicode::ByteToText(static_cast<uint8_t>(ch)));
    auto rank = [&](const std::string& left, const std::string& right) -> std::optional<double> {
      auto it = rank_.find(left + '\n' + right);
      if (it == rank_.end()) return std::nullopt;
      return it->second;
    };
    auto bytes_of = [&](const std::string& t, std::vector<TokenId>* ids) {
      std::string bytes;
      byte_unicode::TextToBytes(t, &bytes);
      for (char b : bytes) {
        const TokenId byte_id = vocab_.Find(byte_unicode::ByteToText(static_cast<uint8_t>(b)));
        if (byte_id != kNoToken) ids->push_back(byte_id);  // a byte with no token is dropped
      }
    };
    return NaiveMerge(vocab_, std::move(s), rank, bytes_of);
  }

 private:
  const Vocab& vocab_;
  std::unordered_map<std::string, int> rank_;  // "left\nright" -> rank
};

// SentencePiece-style BPE over escaped text (spaces already U+2581): starting from UTF-8
// characters (lead-byte lengths), the adjacent pair whose concatenation is the token of highest
// score merges, leftmost first on ties; a final string that is not a token becomes <0xNN> tokens
// (or unk).
inline std::vector<TokenId> NaiveSpm(const Vocab& vocab, std::string_view text) {
  std::vector<std::string> s;
  for (size_t pos = 0; pos < text.size();) {
    const uint8_t lead = static_cast<uint8_t>(text[pos]);
    size_t len = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    len = std::min(len, text.size() - pos);
    s.emplace_back(text.substr(pos, len));
    pos += len;
  }
  auto negated_score = [&](const std::string& left,
                           const std::string& right) -> std::optional<double> {
    const TokenId id = vocab.Find(left + right);
    if (id == kNoToken) return std::nullopt;
    return -static_cast<double>(vocab.scores[id]);
  };
  auto byte_tokens = [&](const std::string& t, std::vector<TokenId>* ids) {
    for (char b : t) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", static_cast<uint8_t>(b));
      TokenId bid = vocab.Find(hex);
      if (bid == kNoToken) bid = vocab.Find(std::string(1, b));
      if (bid == kNoToken) bid = vocab.unk;
      if (bid != kNoToken) ids->push_back(bid);
    }
  };
  return NaiveMerge(vocab, std::move(s), negated_score, byte_tokens);
}

}  // namespace forge::testing
