// The pre-tokenizer table. Patterns are the ones in the models' tokenizer.json (llama.cpp spells
// (?i:'s|...) as '[sS]|...; the same here so both split alike), run by PCRE2 with UTF and UCP.
#include "tokenizer/bpe_presets.h"

namespace forge {
namespace {

// GPT-2 and the many tokenizers that copied it.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3 (tiktoken cl100k-style): up to 3 digits per piece, newlines kept with punctuation.
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: like Llama 3 but one digit per piece.
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: marks stay with their letters.
constexpr std::string_view kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|)"
    R"(\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o / Llama 4 (o200k): case-aware words with attached contractions.
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+)"
    R"([\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral Tekken.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// StarCoder and friends: every digit alone first, then GPT-2.
constexpr std::string_view kGpt2NoTail =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// DeepSeek LLM's letter class, as in its tokenizer.json.
constexpr std::string_view kDeepseekLetters =
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
    "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
    "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
    "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+";
constexpr std::string_view kCjkHangul = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";

std::vector<BpePreset> MakePresets() {
  std::vector<BpePreset> p;
  // The default rules (no pre key, or "default"), also GPT-NeoX's.
  p.push_back(
      {.names = {"default", ""},
       .patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2NoTail, R"(\p{N}+)", "[0-9][0-9][0-9]"}});
  p.push_back({.names = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                         "midm-2.0", "lfm2", "jina-v5-nano"},
               .patterns = {kLlama3},
               .ignore_merges = true,
               .add_bos = true});
  p.push_back({.names = {"dbrx", "smaug-bpe"}, .patterns = {kLlama3}});
  p.push_back({.names = {"chatglm-bpe", "glm4"}, .patterns = {kLlama3}});
  p.push_back({.names = {"deepseek-llm"},
               .patterns = {R"([\r\n])", kDeepseekLetters,
                            "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
                            R"(\s+$)", kCjkHangul, R"(\p{N}+)"},
               .clean_spaces = false});
  p.push_back({.names = {"deepseek-coder"},
               .patterns = {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"},
               .clean_spaces = false});
  p.push_back({.names = {"deepseek-v3"},
               .patterns = {R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                            R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|)"
                            R"([^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|)"
                            R"(\s*[\r\n]+|\s+(?!\S)|\s+)"},
               .clean_spaces = false});
  p.push_back({.names = {"falcon"},
               .patterns = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2NoTail, "[0-9][0-9][0-9]"}});
  p.push_back(
      {.names = {"starcoder", "refact", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
       .patterns = {R"(\p{N})", kGpt2NoTail}});
  p.push_back(
      {.names = {"command-r"}, .patterns = {R"(\p{N})", kGpt2NoTail}, .clean_spaces = false});
  p.push_back({.names = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                         "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais",
                         "exaone4", "jina-v1-en", "jina-v2-code", "roberta-bpe"},
               .patterns = {kGpt2}});
  p.push_back(
      {.names = {"trillion", "granite-docling"}, .patterns = {kGpt2}, .clean_spaces = false});
  p.push_back({.names = {"stablelm2", "megrez"}, .patterns = {kQwen2}});
  p.push_back({.names = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"},
               .patterns = {kQwen2},
               .clean_spaces = false});
  p.push_back({.names = {"qwen35"}, .patterns = {kQwen35}, .clean_spaces = false});
  p.push_back({.names = {"poro-chat", "bloom", "gpt3-finnish"},
               .patterns = {R"( ?[^(\s|.,!?…。，、।۔،)]+)"},
               .clean_spaces = false});
  p.push_back({.names = {"viking"},
               .patterns = {R"( ?[^(\s|.,!?…。，、।۔،)]+)", R"(\p{N})"},
               .clean_spaces = false});
  p.push_back({.names = {"tekken"},
               .patterns = {kTekken},
               .clean_spaces = false,
               .ignore_merges = true,
               .add_bos = true});
  p.push_back({.names = {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"},
               .patterns = {kGpt4o},
               .clean_spaces = false});
  p.push_back({.names = {"seed-coder"},
               .patterns = {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|)"
                            R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|)"
                            R"(\s*[\r\n]+|\s+(?!\S)|\s+)"},
               .clean_spaces = false});
  p.push_back({.names = {"grok-2"}, .patterns = {kQwen2}, .clean_spaces = false});
  p.push_back({.names = {"bailingmoe", "bailingmoe2", "llada-moe"},
               .patterns = {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|)"
                            R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
                            R"(\s*[\r\n]|\s+(?!\S)|\s+)"},
               .clean_spaces = false});
  // Gemma 4: SentencePiece-like BPE over raw UTF-8; only newlines split the text.
  p.push_back({.names = {"gemma4", "granite-embed-multi-311m"},
               .patterns = {R"([^\n]+|[\n]+)"},
               .byte_encode = false,
               .escape_whitespaces = true});
  return p;
}

}  // namespace

const std::vector<BpePreset>& AllBpePresets() {
  static const std::vector<BpePreset>* presets = new std::vector<BpePreset>(MakePresets());
  return *presets;
}

const BpePreset* FindBpePreset(std::string_view pre) {
  for (const BpePreset& p : AllBpePresets()) {
    for (std::string_view n : p.names) {
      if (n == pre) return &p;
    }
  }
  return nullptr;
}

std::string KnownBpePresetNames() {
  std::string out;
  for (const BpePreset& p : AllBpePresets()) {
    for (std::string_view n : p.names) {
      if (n.empty()) continue;
      if (!out.empty()) out += ", ";
      out += n;
    }
  }
  return out;
}

}  // namespace forge
