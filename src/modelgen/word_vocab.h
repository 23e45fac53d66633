// The word vocabulary of synthetic models (make-model --vocab words): a SentencePiece vocabulary
// whose last tokens are a fixed list of English words ("\u2581word"); before them come the control
// tokens (<unk> <s> </s> <|im_start|> <|im_end|>), the 256 byte tokens, single characters and the
// words' prefixes, so any prompt tokenizes. A peaked model over it (successor_first = the first
// word) generates only words: its greedy text is readable and valid UTF-8. ChatML template.
#pragma once

#include <cstdint>

#include "modelgen/synthetic_vocab.h"

namespace forge {

struct WordVocabInfo {
  int64_t n_vocab = 0;     // every token
  int64_t first_word = 0;  // ids [first_word, n_vocab) are the words
};
WordVocabInfo WordVocabShape();

// The tokenizer.* keys (WordVocabShape().n_vocab tokens).
MetadataList WordVocab();

}  // namespace forge
