// ConstrainSample: FillMask, cut to the model's vocabulary, and whether only end tokens remain.
#include "engine/constrained_sample.h"

#include <algorithm>

namespace forge {

Status ConstrainSample(GrammarMatcher& matcher, const TokenVocabView& vocab, int32_t n_vocab,
                       std::vector<uint32_t>* mask, SampleContext* ctx) {
  const size_t words = (static_cast<size_t>(n_vocab) + 31) / 32;
  mask->assign(std::max(words, vocab.mask_words()), 0);
  matcher.FillMask(vocab, mask->data());
  RETURN_IF_ERROR(matcher.status());
  // Tokens the tokenizer knows but the model cannot produce (ids >= n_vocab) are never allowed.
  mask->resize(words);
  if (n_vocab % 32 != 0) mask->back() &= (1u << (n_vocab % 32)) - 1;
  bool any = false, other = false;
  for (size_t w = 0; w < words && !other; ++w) {
    for (uint32_t bits = (*mask)[w]; bits != 0; bits &= bits - 1) {
      any = true;
      const int32_t id = static_cast<int32_t>(w * 32) + __builtin_ctz(bits);
      if (!vocab.IsEnd(id)) {
        other = true;
        break;
      }
    }
  }
  if (!any) {
    return FailedPreconditionError(
        "no token of the vocabulary continues the request's grammar from here");
  }
  ctx->allowed = *mask;
  ctx->only_end_allowed = !other;
  return Status::Ok();
}

bool AdvanceGrammar(GrammarMatcher& matcher, const TokenVocabView& vocab, int32_t token) {
  return token >= 0 && token < vocab.size() && matcher.AcceptToken(vocab, token);
}

}  // namespace forge
