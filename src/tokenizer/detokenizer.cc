// StreamingDetokenizer, and Tokenizer::Decode on top of it.
#include "tokenizer/detokenizer.h"

#include "base/utf8.h"

namespace forge {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {
  const Vocab& v = tokenizer.vocab();
  strip_space_ =
      options.strip_leading_space && (v.add_space_prefix || v.kind == TokenizerKind::kWpm);
}

std::string StreamingDetokenizer::Push(TokenId id) {
  std::string piece = tokenizer_->TokenToPiece(id, options_.special);
  if (at_start_ && id != tokenizer_->vocab().bos && !piece.empty()) {
    at_start_ = false;
    if (strip_space_ && piece[0] == ' ') piece.erase(0, 1);
  }
  std::string out;
  if (pending_.empty()) {
    const size_t used = utf8::AppendSanitized(piece, /*final=*/false, &out);
    pending_.assign(piece, used);
  } else {
    pending_ += piece;
    const size_t used = utf8::AppendSanitized(pending_, /*final=*/false, &out);
    pending_.erase(0, used);
  }
  return out;
}

std::string StreamingDetokenizer::Finish() {
  std::string out;
  utf8::AppendSanitized(pending_, /*final=*/true, &out);
  pending_.clear();
  at_start_ = true;
  return out;
}

std::string Tokenizer::Decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  StreamingDetokenizer detok(*this, options);
  std::string out;
  for (TokenId id : ids) out += detok.Push(id);
  out += detok.Finish();
  return out;
}

}  // namespace forge
