// Generated SentencePiece and byte-level BPE vocabularies, and copying another file's tokenizer
// (a GGUF's tokenizer.* keys, or a Hugging Face tokenizer.json imported as such keys).
#include "modelgen/synthetic_vocab.h"

#include <cstdio>

#include "gguf/gguf_file.h"
#include "modelgen/hf_tokenizer.h"
#include "modelgen/word_vocab.h"

namespace forge {
namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUnused = 5, kByte = 6;

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Strings over a-z of length `len`, in lexicographic order, appended until `out` holds `limit`.
void AppendLetterStrings(const std::string& prefix, int len, size_t limit,
                         std::vector<std::string>* out) {
  std::vector<int> digits(len, 0);
  while (out->size() < limit) {
    std::string s = prefix;
    for (int d : digits) s += static_cast<char>('a' + d);
    out->push_back(s);
    int i = len - 1;
    while (i >= 0 && ++digits[i] == 26) digits[i--] = 0;
    if (i < 0) return;
  }
}

MetadataList SpmVocab(int64_t n_vocab) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {kUnknown, kControl, kControl};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(kByte);
  }
  const std::string space = "\xe2\x96\x81";  // U+2581
  const size_t limit = static_cast<size_t>(n_vocab);
  for (int len = 1; tokens.size() < limit; ++len) {
    AppendLetterStrings(space, len, limit, &tokens);
    AppendLetterStrings("", len, limit, &tokens);
    if (len == 1 && tokens.size() < limit) tokens.push_back(space);
  }
  tokens.resize(limit);
  types.resize(limit, kNormal);
  std::vector<float> scores(limit, 0.0f);
  for (size_t i = 259; i < limit; ++i) scores[i] = -static_cast<float>(i - 259);
  return {{"tokenizer.ggml.model", GgufValue::String("llama")},
          {"tokenizer.ggml.tokens", GgufValue::StringArray(tokens)},
          {"tokenizer.ggml.scores", GgufValue::F32Array(scores)},
          {"tokenizer.ggml.token_type", GgufValue::I32Array(types)},
          {"tokenizer.ggml.bos_token_id", GgufValue::U32(1)},
          {"tokenizer.ggml.eos_token_id", GgufValue::U32(2)},
          {"tokenizer.ggml.unknown_token_id", GgufValue::U32(0)},
          {"tokenizer.ggml.add_bos_token", GgufValue::Bool(true)}};
}

std::vector<std::string> Llama3Specials(bool full) {
  std::vector<std::string> s = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                "<|end_header_id|>", "<|eot_id|>"};
  if (!full) return s;
  // Llama 3.1's 256 special tokens, in id order from 128000.
  s = {"<|begin_of_text|>",
       "<|end_of_text|>",
       "<|reserved_special_token_0|>",
       "<|reserved_special_token_1|>",
       "<|finetune_right_pad_id|>",
       "<|reserved_special_token_2|>",
       "<|start_header_id|>",
       "<|end_header_id|>",
       "<|eom_id|>",
       "<|eot_id|>",
       "<|python_tag|>"};
  for (int i = 3; s.size() < 256; ++i) {
    s.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  }
  return s;
}

std::vector<std::string> Qwen2Specials(bool full) {
  if (!full) return {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  return {"<|endoftext|>",      "<|im_start|>",     "<|im_end|>",     "<|object_ref_start|>",
          "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",    "<|quad_start|>",
          "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
          "<|image_pad|>",      "<|video_pad|>",    "<tool_call>",    "</tool_call>",
          "<|fim_prefix|>",     "<|fim_middle|>",   "<|fim_suffix|>", "<|fim_pad|>",
          "<|repo_name|>",      "<|file_sep|>"};
}

// ChatML (Qwen2) and Llama 3's header format, as Jinja templates.
constexpr const char* kChatMlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr const char* kLlama3Template =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";

MetadataList BpeVocab(VocabKind kind, int64_t n_vocab) {
  const bool llama3 = kind == VocabKind::kBpeLlama3;
  const std::vector<std::string> specials =
      llama3 ? Llama3Specials(n_vocab >= 128256) : Qwen2Specials(n_vocab >= 151665);
  const int64_t n_pad = !llama3 && n_vocab >= 151665 ? n_vocab - 151665 : 0;
  const size_t n_regular = static_cast<size_t>(n_vocab - n_pad) - specials.size();

  // GPT-2's byte <-> printable code point map: printable Latin-1 bytes map to themselves, the
  // rest to U+0100 + n in byte order; ids follow that order (printables first).
  std::vector<std::string> tokens;
  std::vector<int> remapped;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    if (printable)
      tokens.push_back(Utf8(static_cast<uint32_t>(b)));
    else
      remapped.push_back(b);
  }
  for (size_t n = 0; n < remapped.size(); ++n) tokens.push_back(Utf8(0x100 + n));
  // Merges over {space, a-z}: level k joins a level k-1 token and one symbol.
  std::vector<std::string> alphabet = {Utf8(0x120)};  // "Ġ", the byte 0x20
  for (char c = 'a'; c <= 'z'; ++c) alphabet.push_back(std::string(1, c));
  std::vector<std::string> merges, level = alphabet;
  while (tokens.size() < n_regular) {
    std::vector<std::string> next;
    for (const std::string& left : level) {
      for (const std::string& right : alphabet) {
        if (tokens.size() >= n_regular) break;
        merges.push_back(left + " " + right);
        tokens.push_back(left + right);
        next.push_back(left + right);
      }
    }
    level = std::move(next);
  }
  tokens.resize(n_regular);
  std::vector<int32_t> types(n_regular, kNormal);
  const int64_t first_special = static_cast<int64_t>(tokens.size());
  for (const std::string& s : specials) {
    tokens.push_back(s);
    types.push_back(kControl);
  }
  for (int64_t i = 0; i < n_pad; ++i) {
    tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
    types.push_back(kUnused);
  }
  auto id = [&](const std::string& name) {
    for (size_t i = 0; i < specials.size(); ++i) {
      if (specials[i] == name) return GgufValue::U32(static_cast<uint32_t>(first_special + i));
    }
    return GgufValue::U32(static_cast<uint32_t>(first_special));
  };
  MetadataList keys = {{"tokenizer.ggml.model", GgufValue::String("gpt2")},
                       {"tokenizer.ggml.pre", GgufValue::String(llama3 ? "llama-bpe" : "qwen2")},
                       {"tokenizer.ggml.tokens", GgufValue::StringArray(tokens)},
                       {"tokenizer.ggml.token_type", GgufValue::I32Array(types)},
                       {"tokenizer.ggml.merges", GgufValue::StringArray(merges)}};
  if (llama3) {
    keys.push_back({"tokenizer.ggml.bos_token_id", id("<|begin_of_text|>")});
    keys.push_back({"tokenizer.ggml.eos_token_id", id("<|end_of_text|>")});
    keys.push_back({"tokenizer.ggml.eot_token_id", id("<|eot_id|>")});
    keys.push_back({"tokenizer.ggml.add_bos_token", GgufValue::Bool(true)});
    keys.push_back({"tokenizer.chat_template", GgufValue::String(kLlama3Template)});
  } else {
    keys.push_back({"tokenizer.ggml.bos_token_id", id("<|endoftext|>")});
    keys.push_back({"tokenizer.ggml.eos_token_id", id("<|endoftext|>")});
    keys.push_back({"tokenizer.ggml.eot_token_id", id("<|im_end|>")});
    keys.push_back({"tokenizer.ggml.padding_token_id", id("<|endoftext|>")});
    keys.push_back({"tokenizer.ggml.add_bos_token", GgufValue::Bool(false)});
    keys.push_back({"tokenizer.chat_template", GgufValue::String(kChatMlTemplate)});
  }
  return keys;
}

}  // namespace

MetadataList SyntheticVocab(VocabKind kind, int64_t n_vocab) {
  if (kind == VocabKind::kWords) {
    CHECK(n_vocab == WordVocabShape().n_vocab) << "n_vocab " << n_vocab;
    return WordVocab();
  }
  CHECK(n_vocab >= (kind == VocabKind::kSpm ? 3 : 264)) << "n_vocab " << n_vocab;
  return kind == VocabKind::kSpm ? SpmVocab(n_vocab) : BpeVocab(kind, n_vocab);
}

StatusOr<CopiedVocab> ReadVocabFrom(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    auto hf = ReadHfTokenizer(path);
    if (!hf.ok()) return hf.status().WithContext("--vocab-from");
    return hf;
  }
  auto file = GgufFile::Open(path);
  if (!file.ok()) return file.status().WithContext("--vocab-from");
  CopiedVocab v;
  for (const auto& [key, value] : (*file)->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) v.keys.emplace_back(key, value);
  }
  const GgufValue* tokens = (*file)->Find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type() != GgufType::kArray || tokens->items().empty()) {
    return InvalidArgumentError(path +
                                ": tokenizer.ggml.tokens: expected a non-empty array, "
                                "got " +
                                std::string(tokens ? "another type" : "no such key"));
  }
  v.n_vocab = static_cast<int64_t>(tokens->items().size());
  return v;
}

}  // namespace forge
