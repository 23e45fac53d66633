// Vocab::FromGguf: tokenizer.ggml.* metadata -> Vocab, with llama.cpp's defaults per tokenizer
// model and pre-tokenizer, then the keys that override them.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/logging.h"
#include "gguf/gguf_file.h"
#include "tokenizer/bpe_presets.h"

namespace forge {
namespace {

constexpr char kPrefix[] = "tokenizer.ggml.";

std::string Key(const char* name) { return std::string(kPrefix) + name; }

uint32_t AttrOfType(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal:
      return kAttrNormal;
    case TokenType::kUnknown:
      return kAttrUnknown;
    case TokenType::kControl:
      return kAttrControl;
    case TokenType::kUserDefined:
      return kAttrUserDefined;
    case TokenType::kUnused:
      return kAttrUnused;
    case TokenType::kByte:
      return kAttrByte;
    default:
      return 0;  // undefined
  }
}

// Defaults by tokenizer model (llama.cpp's llama_vocab::impl::load).
Status SetModelDefaults(const GgufFile& file, Vocab* v) {
  ASSIGN_OR_RETURN(v->model, file.GetString(Key("model")));
  ASSIGN_OR_RETURN(v->pre, file.GetStringOr(Key("pre"), ""));
  if (v->model == "llama") {
    v->kind = TokenizerKind::kSpm;
    v->bos = 1, v->eos = 2, v->unk = 0;
    v->add_space_prefix = true, v->add_bos = true;
    v->escape_whitespaces = true;
  } else if (v->model == "bert") {
    v->kind = TokenizerKind::kWpm;
    v->bos = 101, v->unk = 100, v->sep = 102, v->pad = 0, v->mask = 103;
    v->add_bos = true, v->add_sep = true, v->clean_spaces = true;
  } else if (v->model == "gpt2" || v->model == "gemma4") {
    v->kind = TokenizerKind::kBpe;
    if (v->model == "gpt2") v->bos = 11, v->eos = 11;
    if (v->model == "gemma4") v->pre = "gemma4";
    const BpePreset* preset = FindBpePreset(v->pre);
    if (preset == nullptr) {
      return UnimplementedError(Key("pre") + " = '" + v->pre +
                                "': unknown pre-tokenizer (known: " + KnownBpePresetNames() + ")");
    }
    v->escape_whitespaces = preset->escape_whitespaces;
    v->clean_spaces = preset->clean_spaces;
    v->add_bos = preset->add_bos;
  } else {
    return UnimplementedError(Key("model") + " = '" + v->model +
                              "': unsupported tokenizer model (Forge has llama, gpt2, gemma4, "
                              "bert)");
  }
  if (v->pre.empty()) v->pre = "default";
  ASSIGN_OR_RETURN(v->add_space_prefix,
                   file.GetBoolOr(Key("add_space_prefix"), v->add_space_prefix));
  ASSIGN_OR_RETURN(v->remove_extra_whitespaces,
                   file.GetBoolOr(Key("remove_extra_whitespaces"), v->remove_extra_whitespaces));
  return Status::Ok();
}

Status ReadTokens(const GgufFile& file, Vocab* v) {
  ASSIGN_OR_RETURN(v->tokens, file.GetStringArray(Key("tokens")));
  const size_t n = v->tokens.size();
  if (n == 0) return InvalidArgumentError(Key("tokens") + " is empty");
  if (n > 0x7FFFFFFF) return OutOfRangeError(Key("tokens") + ": too many tokens");
  v->scores.assign(n, 0.0f);
  if (file.Has(Key("scores"))) {
    auto f = file.GetF32Array(Key("scores"));
    if (f.ok()) {
      v->scores = std::move(*f);
    } else {
      ASSIGN_OR_RETURN(std::vector<int32_t> s, file.GetI32Array(Key("scores")));
      v->scores.assign(s.begin(), s.end());
    }
    if (v->scores.size() < n) {
      return InvalidArgumentError(Key("scores") + ": " + std::to_string(v->scores.size()) +
                                  " values, expected " + std::to_string(n));
    }
    v->scores.resize(n);
    // NaN has no order: the merges by score would be undefined.
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(v->scores[i])) {
        return InvalidArgumentError(Key("scores") + ": NaN at token " + std::to_string(i) + " ('" +
                                    v->tokens[i] + "')");
      }
    }
  }
  v->attrs.assign(n, kAttrNormal);
  if (file.Has(Key("token_type"))) {
    ASSIGN_OR_RETURN(std::vector<int32_t> types, file.GetI32Array(Key("token_type")));
    if (types.size() < n) {
      return InvalidArgumentError(Key("token_type") + ": " + std::to_string(types.size()) +
                                  " values, expected " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) v->attrs[i] = AttrOfType(types[i]);
  }
  v->index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string& t = v->tokens[i];
    if (t.empty()) t = "[EMPTY_" + std::to_string(i) + "]";
    auto [it, inserted] = v->index.emplace(t, static_cast<TokenId>(i));
    if (!inserted) {
      return InvalidArgumentError(Key("tokens") + ": duplicate token '" + t + "' at ids " +
                                  std::to_string(it->second) + " and " + std::to_string(i));
    }
    v->max_token_bytes = std::max(v->max_token_bytes, t.size());
  }
  if (v->kind == TokenizerKind::kBpe) {
    if (!file.Has(Key("merges"))) return NotFoundError(Key("merges") + " is missing (BPE vocab)");
    ASSIGN_OR_RETURN(v->merges, file.GetStringArray(Key("merges")));
  }
  return Status::Ok();
}

Status ReadSpecialIds(const GgufFile& file, Vocab* v) {
  struct Special {
    const char* key;
    TokenId* id;
  };
  const Special specials[] = {
      {"bos_token_id", &v->bos},     {"eos_token_id", &v->eos},     {"eot_token_id", &v->eot},
      {"eom_token_id", &v->eom},     {"unknown_token_id", &v->unk}, {"seperator_token_id", &v->sep},
      {"padding_token_id", &v->pad}, {"mask_token_id", &v->mask},
  };
  for (const Special& s : specials) {
    if (*s.id != kNoToken && !v->Valid(*s.id)) *s.id = kNoToken;  // a default beyond the vocab
    const GgufValue* value = file.Find(Key(s.key));
    if (value == nullptr) continue;
    if (!GgufIsInteger(value->type())) {
      return InvalidArgumentError(Key(s.key) + " has type " +
                                  std::string(GgufTypeName(value->type())) +
                                  ", expected an integer");
    }
    const bool negative = (value->type() == GgufType::kI8 || value->type() == GgufType::kI16 ||
                           value->type() == GgufType::kI32 || value->type() == GgufType::kI64) &&
                          value->i64() < 0;
    const uint64_t id = negative ? UINT64_MAX : value->u64();
    if (id >= static_cast<uint64_t>(v->size())) {
      LOG(DEBUG) << Key(s.key) << " = " << id << " is outside the vocab (" << v->size()
                 << " tokens); keeping " << *s.id;
      continue;
    }
    *s.id = static_cast<TokenId>(id);
  }
  if (v->kind == TokenizerKind::kWpm && file.Has(Key("cls_token_id")) &&
      !file.Has(Key("bos_token_id"))) {
    auto cls = file.GetU64(Key("cls_token_id"));
    if (cls.ok() && *cls < static_cast<uint64_t>(v->size())) v->bos = static_cast<TokenId>(*cls);
  }
  ASSIGN_OR_RETURN(v->add_bos, file.GetBoolOr(Key("add_bos_token"), v->add_bos));
  ASSIGN_OR_RETURN(v->add_eos, file.GetBoolOr(Key("add_eos_token"), v->add_eos));
  ASSIGN_OR_RETURN(v->add_sep, file.GetBoolOr(Key("add_sep_token"), v->add_sep));
  if (v->pre == "gemma4") v->add_bos = true;  // as llama.cpp: Gemma 4 files say false wrongly
  if (v->add_bos && v->bos == kNoToken) {
    return InvalidArgumentError(Key("add_bos_token") + " is true but there is no BOS token");
  }
  if (v->add_eos && v->eos == kNoToken) {
    return InvalidArgumentError(Key("add_eos_token") + " is true but there is no EOS token");
  }
  if (v->add_sep && v->sep == kNoToken) v->add_sep = false;
  ASSIGN_OR_RETURN(v->lowercase, file.GetBoolOr(Key("normalizer.lowercase"), true));
  ASSIGN_OR_RETURN(v->strip_accents, file.GetBoolOr(Key("normalizer.strip_accents"), v->lowercase));
  return Status::Ok();
}

// Text-based detection of end-of-turn tokens and the end-of-generation set (llama.cpp's lists).
void DetectEndTokens(Vocab* v) {
  static const char* const kEot[] = {
      "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
      "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
  static const char* const kEog[] = {"<|eot_id|>",
                                     "<|im_end|>",
                                     "<|end|>",
                                     "<|return|>",
                                     "<|call|>",
                                     "<end_of_turn>",
                                     "<|endoftext|>",
                                     "<|eom_id|>",
                                     "<EOT>",
                                     "_<EOT>",
                                     "<|end_of_text|>",
                                     "<end_of_utterance>",
                                     "<｜end▁of▁sentence｜>"};
  auto mark_control = [&](TokenId id) {
    if ((v->attrs[id] & kAttrControl) == 0) v->attrs[id] |= kAttrControl;
  };
  if (v->eot == kNoToken) {
    for (const char* t : kEot) {
      TokenId id = v->Find(t);
      if (id != kNoToken) {
        v->eot = id;
        mark_control(id);
        break;
      }
    }
  }
  if (v->eom == kNoToken) v->eom = v->Find("<|eom_id|>");
  for (const char* t : kEog) {
    TokenId id = v->Find(t);
    if (id != kNoToken) {
      v->eog.insert(id);
      mark_control(id);
    }
  }
  for (TokenId id : {v->eos, v->eot, v->eom}) {
    if (id != kNoToken) v->eog.insert(id);
  }
  // Control tokens named "unused" are unused.
  for (TokenId id = 0; id < v->size(); ++id) {
    if ((v->attrs[id] & kAttrControl) && v->tokens[id].find("unused") != std::string::npos) {
      v->attrs[id] |= kAttrUnused;
    }
  }
}

// Per-model strip attributes llama.cpp sets by name (Phi-3's special tokens eat the space after).
Status SetStripAttrs(const GgufFile& file, Vocab* v) {
  ASSIGN_OR_RETURN(std::string name, file.GetStringOr("general.name", ""));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) {
    return Status::Ok();
  }
  for (TokenId id = 0; id < v->size(); ++id) {
    if (v->attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown))
      v->attrs[id] |= kAttrRstrip;
  }
  for (const char* t : {"</s>"}) {
    if (TokenId id = v->Find(t); id != kNoToken) v->attrs[id] |= kAttrRstrip;
  }
  for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) {
    if (TokenId id = v->Find(t); id != kNoToken) v->attrs[id] &= ~kAttrRstrip;
  }
  return Status::Ok();
}

}  // namespace

std::string_view TokenizerKindName(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kSpm:
      return "SentencePiece";
    case TokenizerKind::kBpe:
      return "BPE";
    case TokenizerKind::kWpm:
      return "WordPiece";
  }
  return "?";
}

TokenId Vocab::ByteToken(uint8_t byte) const {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "<0x%02X>", byte);
  TokenId id = Find(hex);
  if (id != kNoToken) return id;
  return Find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
}

StatusOr<Vocab> Vocab::FromGguf(const GgufFile& file) {
  Vocab v;
  RETURN_IF_ERROR(SetModelDefaults(file, &v));
  RETURN_IF_ERROR(ReadTokens(file, &v));
  RETURN_IF_ERROR(ReadSpecialIds(file, &v));
  DetectEndTokens(&v);
  RETURN_IF_ERROR(SetStripAttrs(file, &v));
  if (v.kind == TokenizerKind::kSpm) {
    v.newline = v.ByteToken('\n');
  } else {
    v.newline = v.Find(v.kind == TokenizerKind::kBpe && v.pre != "gemma4" ? "\xC4\x8A" : "\n");
  }
  return v;
}

}  // namespace forge
