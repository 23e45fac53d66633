// ConstrainSample: a grammar-constrained sample's allowed set for its next token, as the sampler
// takes it (SampleContext::allowed, backend/cpu/sample/sample.h's allowed rows).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"
#include "sampling/sampler.h"

namespace forge {

// Fills *mask ([ceil(n_vocab / 32)] words) with the tokens the matcher allows next (ids the
// vocabulary view lacks, or at or past n_vocab, never), points ctx->allowed at it and sets
// ctx->only_end_allowed when only end-of-generation tokens are allowed. Errors: the matcher's
// (its grammar passed its bounds), and FailedPrecondition when no token is allowed at all.
Status ConstrainSample(GrammarMatcher& matcher, const TokenVocabView& vocab, int32_t n_vocab,
                       std::vector<uint32_t>* mask, SampleContext* ctx);

// Advances the matcher by a sampled token; false when the grammar does not allow it (or the id is
// outside the vocabulary view).
bool AdvanceGrammar(GrammarMatcher& matcher, const TokenVocabView& vocab, int32_t token);

}  // namespace forge
