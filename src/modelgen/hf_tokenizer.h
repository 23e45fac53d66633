// Importing a Hugging Face tokenizer (tokenizer.json, with the tokenizer_config.json beside it)
// as the tokenizer.* keys llama.cpp's converter (convert_hf_to_gguf.py) writes for it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "modelgen/synthetic_vocab.h"

namespace forge {

// The tokenizer.* keys of a tokenizer.json (a file over 64 MiB is refused). Its model must be
// "BPE", one of:
//  - byte-level (GPT-2 bytes; Llama 3, Qwen2/3): tokenizer.ggml.model "gpt2", tokenizer.ggml.pre
//    chosen by the pre-tokenizer's Split regex (HfPreTokenizers(); an unknown one is an error
//    naming it), merges as "left right".
//  - SentencePiece-style with byte_fallback ("\u2581" for spaces, <0xNN> tokens; Gemma 3, Llama
//    2): tokenizer.ggml.model "llama", with each token's score minus the rank of the first merge
//    that makes it (SentencePiece merges the best-scored adjacent pair; this is Hugging Face's
//    ranked merges when every split of a token into two tokens is a listed merge, as in files
//    converted from SentencePiece: otherwise an error), add_space_prefix from a Prepend
//    normalizer or a Metaspace pre-tokenizer, and U+2581 in user-defined tokens written as
//    spaces, as the converter writes them (they are matched in the text before its spaces become
//    U+2581, and decoded as they are): so a literal U+2581 run in the text, which Hugging Face
//    matches as such a token, is split as spaces would be instead.
// Tokens are model.vocab and added_tokens by id (max id + 1 of them, no gaps). Token types:
// normal 1, unknown 2 (model.unk_token), control 3 (added, special), user-defined 4 (added, not
// special), byte 6 (<0xNN>, SentencePiece-style). From tokenizer_config.json (optional): bos /
// eos / unk / pad ids (a token text or {"content": text}; config.json's *_token_id when absent),
// add_bos_token / add_eos_token (else what the post_processor's template adds) and the chat
// template (a string, or the "default" of a list of named ones; else chat_template.jinja). Every
// error names the file and the key.
StatusOr<CopiedVocab> ReadHfTokenizer(const std::string& tokenizer_json_path);

// The byte-level pre-tokenizers ReadHfTokenizer recognizes: the Split regex as tokenizer.json
// spells it -> the tokenizer.ggml.pre written, and the model.ignore_merges that pre implies
// (tests check each against Forge's BPE presets).
struct HfPreTokenizer {
  std::string_view pre;
  std::string_view regex;
  bool ignore_merges;
};
const std::vector<HfPreTokenizer>& HfPreTokenizers();

}  // namespace forge
