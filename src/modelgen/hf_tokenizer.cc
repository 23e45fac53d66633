// ReadHfTokenizer: tokenizer.json (+ tokenizer_config.json, config.json, chat_template.jinja
// beside it) -> the tokenizer.* keys, as convert_hf_to_gguf.py writes them.
#include "modelgen/hf_tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace forge {
namespace {

using json = nlohmann::json;

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;
constexpr std::uintmax_t kMaxJsonBytes = std::uintmax_t{64} << 20;
constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581: SentencePiece's space
// GPT-2's split regex (what a ByteLevel pre-tokenizer with use_regex applies).
constexpr const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Index = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

Status Bad(const std::string& file, const std::string& key, const std::string& what) {
  return InvalidArgumentError(file + ": " + key + ": " + what);
}

// (*obj)[key], or null when obj is null, not an object or has no such key.
const json* Get(const json* obj, const char* key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// Whether v is the string s.
bool Is(const json* v, std::string_view s) {
  return v != nullptr && v->is_string() && v->get_ref<const std::string&>() == s;
}

bool Flag(const json* obj, const char* key, bool dflt) {
  const json* f = Get(obj, key);
  return f != nullptr && f->is_boolean() ? f->get<bool>() : dflt;
}

std::string TypeOf(const json* v) { return v == nullptr ? "missing" : std::string(v->type_name()); }

// The steps of a normalizer or pre-tokenizer: the list of a Sequence, else itself (none: null).
std::vector<const json*> Steps(const json* v, const char* list_key) {
  std::vector<const json*> steps;
  if (v == nullptr || v->is_null()) return steps;
  const json* list = Get(v, list_key);
  if (Is(Get(v, "type"), "Sequence") && list != nullptr && list->is_array()) {
    for (const json& s : *list) steps.push_back(&s);
  } else {
    steps.push_back(v);
  }
  return steps;
}

// The bytes of a file of at most 64 MiB.
StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return NotFoundError(path + ": " + ec.message());
  if (size > kMaxJsonBytes) {
    return InvalidArgumentError(path + ": " + std::to_string(size) +
                                " bytes; Forge reads tokenizer files of at most 64 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size))) {
    return IoError(path + ": cannot read");
  }
  return text;
}

StatusOr<json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(path + ": not valid JSON: " + e.what());
  }
}

// A merge as its two parts: "left right" or ["left", "right"].
std::optional<std::pair<std::string, std::string>> MergeParts(const json& m) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) return {};
    return std::make_pair(s.substr(0, space), s.substr(space + 1));
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return std::make_pair(m[0].get<std::string>(), m[1].get<std::string>());
  }
  return {};
}

struct HfVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  Index index;
  std::vector<std::pair<std::string, std::string>> merges;
};

// model.vocab and added_tokens by id (an added token replaces the vocab's text and type).
Status ReadTokens(const std::string& file, const json& root, HfVocab* v) {
  struct Entry {
    int64_t id;
    bool added;
    std::string text;
    int32_t type;
  };
  std::vector<Entry> entries;
  const json* vocab = Get(Get(&root, "model"), "vocab");
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) {
    return Bad(file, "model.vocab", "expected an object of token -> id, got " + TypeOf(vocab));
  }
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return Bad(file, "model.vocab[\"" + it.key() + "\"]", "expected an id >= 0");
    }
    entries.push_back({it->get<int64_t>(), false, it.key(), kNormal});
  }
  if (const json* added = Get(&root, "added_tokens"); added != nullptr && !added->is_null()) {
    if (!added->is_array()) return Bad(file, "added_tokens", "expected an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const json* id = Get(&a, "id");
      const json* content = Get(&a, "content");
      const json* special = Get(&a, "special");
      if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
          content == nullptr || !content->is_string() ||
          (special != nullptr && !special->is_boolean())) {
        return Bad(file, "added_tokens[" + std::to_string(i) + "]",
                   "expected {\"id\": id >= 0, \"content\": text, \"special\": bool}");
      }
      const bool is_special = special != nullptr && special->get<bool>();
      entries.push_back({id->get<int64_t>(), true, content->get<std::string>(),
                         is_special ? kControl : kUserDefined});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.id != b.id ? a.id < b.id : !a.added && b.added;
  });
  for (const Entry& e : entries) {
    const int64_t next = static_cast<int64_t>(v->tokens.size());
    if (e.id > next) {
      return Bad(file, "model.vocab",
                 "no token has id " + std::to_string(next) +
                     " (the ids of model.vocab and added_tokens must run "
                     "from 0 without gaps; the next is " +
                     std::to_string(e.id) + ")");
    }
    if (e.id == next) {
      if (next >= INT32_MAX) return Bad(file, "model.vocab", "too many tokens");
      v->tokens.push_back(e.text);
      v->types.push_back(e.type);
    } else if (e.added) {
      v->tokens[e.id] = e.text;
      v->types[e.id] = e.type;
    } else {
      return Bad(file, "model.vocab",
                 "id " + std::to_string(e.id) + " is given to '" + v->tokens[e.id] + "' and '" +
                     e.text + "'");
    }
  }
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    auto [it, inserted] = v->index.emplace(v->tokens[i], static_cast<int32_t>(i));
    if (!inserted) {
      return Bad(file, "added_tokens",
                 "token '" + v->tokens[i] + "' has ids " + std::to_string(it->second) + " and " +
                     std::to_string(i));
    }
  }
  const json* merges = Get(Get(&root, "model"), "merges");
  if (merges == nullptr || !merges->is_array()) {
    return Bad(file, "model.merges", "expected an array, got " + TypeOf(merges));
  }
  for (size_t i = 0; i < merges->size(); ++i) {
    auto parts = MergeParts((*merges)[i]);
    if (!parts) {
      return Bad(file, "model.merges[" + std::to_string(i) + "]",
                 "expected \"left right\" or [\"left\", \"right\"]");
    }
    v->merges.push_back(std::move(*parts));
  }
  if (const json* unk = Get(Get(&root, "model"), "unk_token"); unk != nullptr && unk->is_string()) {
    auto it = v->index.find(unk->get<std::string>());
    if (it != v->index.end() && v->types[it->second] == kNormal) v->types[it->second] = kUnknown;
  }
  return Status::Ok();
}

// The tokenizer.ggml.pre of a byte-level pre-tokenizer: [Split(regex), ByteLevel(no regex)] or
// ByteLevel alone (GPT-2's regex).
StatusOr<std::string> BytePreName(const std::string& file, const json& root) {
  const std::vector<const json*> steps = Steps(Get(&root, "pre_tokenizer"), "pretokenizers");
  if (steps.empty() || !Is(Get(steps.back(), "type"), "ByteLevel")) {
    return Bad(file, "pre_tokenizer", "a byte-level BPE needs a ByteLevel pre-tokenizer last");
  }
  if (Flag(steps.back(), "add_prefix_space", false)) {
    return Bad(file, "pre_tokenizer.add_prefix_space", "true is not supported");
  }
  const bool ignore_merges = Flag(Get(&root, "model"), "ignore_merges", false);
  std::string regex;
  if (steps.size() == 1 && Flag(steps.back(), "use_regex", true)) {
    regex = kGpt2Regex;  // ByteLevel's own
  } else {
    const json* r = steps.size() == 2 && Is(Get(steps[0], "type"), "Split") &&
                            !Flag(steps.back(), "use_regex", true)
                        ? Get(Get(steps[0], "pattern"), "Regex")
                        : nullptr;
    if (r == nullptr || !r->is_string()) {
      return Bad(file, "pre_tokenizer",
                 "expected [Split(Regex), ByteLevel(use_regex false)] or ByteLevel alone");
    }
    regex = r->get<std::string>();
  }
  for (const HfPreTokenizer& p : HfPreTokenizers()) {
    if (regex != p.regex) continue;
    if (ignore_merges != p.ignore_merges) {
      return Bad(file, "model.ignore_merges",
                 std::string(ignore_merges ? "true" : "false") + ", but Forge's pre-tokenizer '" +
                     std::string(p.pre) + "' for this regex has it " +
                     (p.ignore_merges ? "true" : "false"));
    }
    return std::string(p.pre);
  }
  return Bad(file, "pre_tokenizer.pretokenizers[0].pattern.Regex",
             "unknown pre-tokenizer regex '" + regex + "'");
}

// SentencePiece-style: the normalizer / pre-tokenizer may only write spaces as U+2581 (and put
// one before the text). Returns add_space_prefix.
StatusOr<bool> SpmSpaces(const std::string& file, const json& root) {
  bool prefix = false, replaced = false;
  for (const json* n : Steps(Get(&root, "normalizer"), "normalizers")) {
    const json* type = Get(n, "type");
    if (Is(type, "Prepend") && Is(Get(n, "prepend"), kSpace)) {
      prefix = true;
    } else if (Is(type, "Replace") && Is(Get(Get(n, "pattern"), "String"), " ") &&
               Is(Get(n, "content"), kSpace)) {
      replaced = true;
    } else {
      return Bad(file, "normalizer", "unsupported for a SentencePiece-style BPE: " + n->dump());
    }
  }
  const json* pre = Get(&root, "pre_tokenizer");
  if (pre == nullptr || pre->is_null()) return prefix;
  const json* type = Get(pre, "type");
  if (Is(type, "Metaspace") && Is(Get(pre, "replacement"), kSpace)) {
    const json* scheme = Get(pre, "prepend_scheme");
    if (scheme != nullptr && scheme->is_string()) return prefix || !Is(scheme, "never");
    return prefix || Flag(pre, "add_prefix_space", false);
  }
  // Splitting at spaces once they are U+2581 splits nothing (Gemma 3).
  if (replaced && Is(type, "Split") && Is(Get(Get(pre, "pattern"), "String"), " ")) return prefix;
  return Bad(file, "pre_tokenizer", "unsupported for a SentencePiece-style BPE: " + pre->dump());
}

// text with every U+2581 a space.
std::string SpacesOf(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpace.size(), kSpace) == 0) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// SentencePiece scores from ranked merges: minus the rank of the first merge making each token
// (0 for tokens no merge makes). Refused unless every split of a token into two tokens is a
// merge: SentencePiece would merge such a pair where Hugging Face does not.
StatusOr<std::vector<float>> SpmScores(const std::string& file, const HfVocab& v) {
  if (v.merges.size() >= (size_t{1} << 24)) return Bad(file, "model.merges", "too many merges");
  std::vector<float> scores(v.tokens.size(), 0.0f);
  std::unordered_set<uint64_t> pairs;
  pairs.reserve(v.merges.size());
  for (size_t r = 0; r < v.merges.size(); ++r) {
    const auto& [left, right] = v.merges[r];
    auto l = v.index.find(left), rt = v.index.find(right), t = v.index.find(left + right);
    if (l == v.index.end() || rt == v.index.end() || t == v.index.end()) {
      return Bad(file, "model.merges[" + std::to_string(r) + "]",
                 "'" + left + " " + right + "' merges or makes a string that is not a token");
    }
    pairs.insert(static_cast<uint64_t>(l->second) << 32 | static_cast<uint32_t>(rt->second));
    float& score = scores[t->second];
    if (score == 0.0f) score = -static_cast<float>(r + 1);  // exact: ranks stay below 2^24
  }
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const std::string& t = v.tokens[id];
    for (size_t i = 1; i < t.size(); ++i) {
      if ((static_cast<uint8_t>(t[i]) & 0xC0) == 0x80) continue;  // inside a UTF-8 sequence
      auto l = v.index.find(std::string_view(t).substr(0, i));
      auto r = v.index.find(std::string_view(t).substr(i));
      if (l == v.index.end() || r == v.index.end()) continue;
      if (!pairs.count(static_cast<uint64_t>(l->second) << 32 | static_cast<uint32_t>(r->second))) {
        return Bad(file, "model.merges",
                   "no merge '" + l->first + " " + r->first + "' though '" + t +
                       "' is a token: ranked merges that SentencePiece scores cannot express");
      }
    }
  }
  return scores;
}

// A token text in tokenizer_config.json: "text", {"content": "text"} or null.
StatusOr<std::optional<std::string>> ConfigToken(const std::string& file, const json& config,
                                                 const char* key) {
  const json* v = Get(&config, key);
  if (v == nullptr || v->is_null()) return std::optional<std::string>();
  if (v->is_object()) v = Get(v, "content");
  if (v == nullptr || !v->is_string()) {
    return Bad(file, key, "expected a token text, {\"content\": text} or null");
  }
  return std::optional<std::string>(v->get<std::string>());
}

// Special ids, add_bos / add_eos and the chat template.
Status ReadConfig(const std::string& file, const json& root, const HfVocab& v, MetadataList* keys) {
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  const std::string config_path = (dir / "tokenizer_config.json").string();
  const std::string model_config_path = (dir / "config.json").string();
  json config = json::object(), model_config = json::object();
  if (std::filesystem::exists(config_path)) {
    ASSIGN_OR_RETURN(config, ReadJson(config_path));
  }
  if (std::filesystem::exists(model_config_path)) {
    ASSIGN_OR_RETURN(model_config, ReadJson(model_config_path));
  }
  struct Special {
    const char* config_key;
    const char* gguf_key;
  };
  for (const Special& s : {Special{"bos_token", "bos_token_id"},
                           {"eos_token", "eos_token_id"},
                           {"unk_token", "unknown_token_id"},
                           {"pad_token", "padding_token_id"}}) {
    ASSIGN_OR_RETURN(std::optional<std::string> text,
                     ConfigToken(config_path, config, s.config_key));
    const std::string gguf_key = std::string("tokenizer.ggml.") + s.gguf_key;
    if (text) {
      auto it = v.index.find(*text);
      if (it == v.index.end()) {
        return Bad(config_path, s.config_key, "'" + *text + "' is not a token of " + file);
      }
      keys->emplace_back(gguf_key, GgufValue::U32(static_cast<uint32_t>(it->second)));
      continue;
    }
    const json* id = Get(&model_config, (std::string(s.config_key) + "_id").c_str());
    if (id != nullptr && id->is_array() && !id->empty()) id = &(*id)[0];  // eos_token_id lists
    if (id != nullptr && id->is_number_integer() && id->get<int64_t>() >= 0 &&
        id->get<int64_t>() < static_cast<int64_t>(v.tokens.size())) {
      keys->emplace_back(gguf_key, GgufValue::U32(static_cast<uint32_t>(id->get<int64_t>())));
    }
  }
  // add_bos / add_eos: the config's, else whether the post-processor's template adds them.
  std::optional<bool> add[2];
  const char* add_keys[2] = {"add_bos_token", "add_eos_token"};
  for (int i = 0; i < 2; ++i) {
    if (const json* a = Get(&config, add_keys[i]); a != nullptr && !a->is_null()) {
      if (!a->is_boolean()) return Bad(config_path, add_keys[i], "expected true or false");
      add[i] = a->get<bool>();
    }
  }
  for (const json* p : Steps(Get(&root, "post_processor"), "processors")) {
    const json* single = Get(p, "single");
    if (!Is(Get(p, "type"), "TemplateProcessing") || single == nullptr || !single->is_array() ||
        single->empty()) {
      continue;
    }
    if (!add[0]) add[0] = Get(&single->front(), "SpecialToken") != nullptr;
    if (!add[1]) add[1] = Get(&single->back(), "SpecialToken") != nullptr;
  }
  for (int i = 0; i < 2; ++i) {
    if (add[i]) {
      keys->emplace_back(std::string("tokenizer.ggml.") + add_keys[i], GgufValue::Bool(*add[i]));
    }
  }
  // The chat template: a string, or the "default" of [{"name", "template"}, ...].
  const json* tmpl = Get(&config, "chat_template");
  if (tmpl != nullptr && tmpl->is_array()) {
    const json* found = nullptr;
    for (const json& t : *tmpl) {
      if (Is(Get(&t, "name"), "default")) found = Get(&t, "template");
    }
    if (found == nullptr) return Bad(config_path, "chat_template", "a list without \"default\"");
    tmpl = found;
  }
  if (tmpl != nullptr && !tmpl->is_null()) {
    if (!tmpl->is_string()) return Bad(config_path, "chat_template", "expected a string");
    keys->emplace_back("tokenizer.chat_template", GgufValue::String(tmpl->get<std::string>()));
  } else if (const std::string jinja = (dir / "chat_template.jinja").string();
             std::filesystem::exists(jinja)) {
    ASSIGN_OR_RETURN(std::string text, ReadSmallFile(jinja));
    keys->emplace_back("tokenizer.chat_template", GgufValue::String(std::move(text)));
  }
  return Status::Ok();
}

}  // namespace

const std::vector<HfPreTokenizer>& HfPreTokenizers() {
  static const std::vector<HfPreTokenizer>* table = new std::vector<HfPreTokenizer>{
      {"llama-bpe",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+)"
       R"([\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       true},
      {"qwen2",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
       R"(|\s*[\r\n]+|\s+(?!\S)|\s+)",
       false},
      {"qwen35",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M})"
       R"(\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       false},
      {"gpt-2", kGpt2Regex, false},
  };
  return *table;
}

StatusOr<CopiedVocab> ReadHfTokenizer(const std::string& file) {
  ASSIGN_OR_RETURN(json root, ReadJson(file));
  const json* model = Get(&root, "model");
  const json* type = Get(model, "type");
  if (!Is(type, "BPE")) {
    return UnimplementedError(file + ": model.type: " + (type ? type->dump() : "missing") +
                              " (Forge imports BPE tokenizers only)");
  }
  HfVocab v;
  RETURN_IF_ERROR(ReadTokens(file, root, &v));
  const bool spm = Flag(model, "byte_fallback", false);
  CopiedVocab out;
  MetadataList& keys = out.keys;
  if (spm) {
    ASSIGN_OR_RETURN(bool add_space_prefix, SpmSpaces(file, root));
    ASSIGN_OR_RETURN(std::vector<float> scores, SpmScores(file, v));
    for (size_t id = 0; id < v.tokens.size(); ++id) {
      const std::string& t = v.tokens[id];
      if (v.types[id] == kNormal && t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(t[3])) &&
          std::isxdigit(static_cast<unsigned char>(t[4]))) {
        v.types[id] = kByte;
      }
      // As the converter does: user-defined tokens are matched in the text before spaces become
      // U+2581, and shown as they are ("\u2581\u2581" is Gemma's two spaces).
      if (v.types[id] == kUserDefined) v.tokens[id] = SpacesOf(t);
    }
    keys.emplace_back("tokenizer.ggml.model", GgufValue::String("llama"));
    keys.emplace_back("tokenizer.ggml.tokens", GgufValue::StringArray(v.tokens));
    keys.emplace_back("tokenizer.ggml.scores", GgufValue::F32Array(scores));
    keys.emplace_back("tokenizer.ggml.token_type", GgufValue::I32Array(v.types));
    keys.emplace_back("tokenizer.ggml.add_space_prefix", GgufValue::Bool(add_space_prefix));
  } else {
    const json* norm = Get(&root, "normalizer");
    // NFC (Qwen) is left out, as llama.cpp leaves it: text is NFC already nearly always.
    if (norm != nullptr && !norm->is_null() && !Is(Get(norm, "type"), "NFC")) {
      return Bad(file, "normalizer", "unsupported for a byte-level BPE: " + norm->dump());
    }
    ASSIGN_OR_RETURN(std::string pre, BytePreName(file, root));
    std::vector<std::string> merges;
    merges.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
      const auto& [left, right] = v.merges[i];
      if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos) {
        return Bad(file, "model.merges[" + std::to_string(i) + "]",
                   "a part holds a space, which GGUF's \"left right\" cannot tell apart");
      }
      merges.push_back(left + " " + right);
    }
    keys.emplace_back("tokenizer.ggml.model", GgufValue::String("gpt2"));
    keys.emplace_back("tokenizer.ggml.pre", GgufValue::String(pre));
    keys.emplace_back("tokenizer.ggml.tokens", GgufValue::StringArray(v.tokens));
    keys.emplace_back("tokenizer.ggml.token_type", GgufValue::I32Array(v.types));
    keys.emplace_back("tokenizer.ggml.merges", GgufValue::StringArray(merges));
  }
  RETURN_IF_ERROR(ReadConfig(file, root, v, &keys));
  out.n_vocab = static_cast<int64_t>(v.tokens.size());
  return out;
}

}  // namespace forge
