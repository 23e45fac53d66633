// BPE pre-tokenizer presets keyed by tokenizer.ggml.pre: the split regexes (applied in sequence)
// and the flags each pre-tokenizer implies, following llama.cpp's table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge {

struct BpePreset {
  std::vector<std::string_view> names;     // tokenizer.ggml.pre values that select it
  std::vector<std::string_view> patterns;  // PCRE2 syntax; each splits the pieces of the last
  bool clean_spaces = true;                // clean_up_tokenization_spaces
  bool ignore_merges = false;              // a piece that is a whole token is not merged
  bool add_bos = false;                    // default of add_bos (a GGUF key overrides it)
  bool byte_encode = true;  // GPT-2 byte-to-unicode mapping (false: UTF-8 with <0xNN> tokens)
  bool escape_whitespaces = false;  // ' ' becomes U+2581 before splitting (gemma4)
};

// The preset for a tokenizer.ggml.pre value; "" and "default" give the default rules. Null for
// a value Forge does not know.
const BpePreset* FindBpePreset(std::string_view pre);
// Every preset, in table order (for tests).
const std::vector<BpePreset>& AllBpePresets();
// Every known pre value, comma separated (for error messages).
std::string KnownBpePresetNames();

}  // namespace forge
