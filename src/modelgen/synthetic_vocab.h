// Vocabularies for synthetic models: a generated SentencePiece or byte-level BPE vocabulary of
// any size, or every tokenizer.* key copied from another GGUF file or imported from a Hugging
// Face tokenizer.json.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"
#include "modelgen/model_spec.h"

namespace forge {

using MetadataList = std::vector<std::pair<std::string, GgufValue>>;

// The tokenizer.* keys of a generated vocabulary of exactly n_vocab tokens.
//  kSpm: <unk> <s> </s>, <0x00>..<0xFF>, then "\u2581" + letters and letter strings, shortest
//        first (scores: minus the index), bos 1, eos 2, add_bos.
//  kBpeLlama3 / kBpeQwen2: the 256 GPT-2 byte tokens, then merges of "\u0120" (space) and
//        a-z strings (each merge's parts exist before it), then the family's special tokens
//        (Llama 3: <|begin_of_text|> ... <|eot_id|>, all 256 reserved ones when n_vocab >= 128256;
//        Qwen2: <|endoftext|> <|im_start|> <|im_end|> ..., [PADn] tokens past 151665) and a
//        chat template in the family's format.
//  kWords: modelgen/word_vocab.h.
// Requires: n_vocab >= 3 (kSpm) or >= 264 (BPE); kWords: exactly WordVocabShape().n_vocab.
MetadataList SyntheticVocab(VocabKind kind, int64_t n_vocab);

// Every tokenizer.* key of the GGUF at path, and its token count; a path ending in ".json" is a
// Hugging Face tokenizer.json, imported by ReadHfTokenizer (modelgen/hf_tokenizer.h).
struct CopiedVocab {
  MetadataList keys;
  int64_t n_vocab = 0;
};
StatusOr<CopiedVocab> ReadVocabFrom(const std::string& path);

}  // namespace forge
