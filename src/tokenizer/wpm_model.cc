// WpmModel: BertNormalizer + BertPreTokenizer + WordPiece. Character classes come from PCRE2;
// lowercase and accent stripping from the generated tables in unicode_data.cc.
#include "tokenizer/wpm_model.h"

#include <cctype>

#include "base/utf8.h"
#include "tokenizer/unicode_data.h"

namespace forge {
namespace {

constexpr size_t kMaxWordChars = 100;          // longer words are [UNK] (Hugging Face's default)
constexpr char kWordStart[] = "\xE2\x96\x81";  // U+2581 starts a word's first piece in GGUF

bool IsCjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace

StatusOr<std::unique_ptr<WpmModel>> WpmModel::Create(const Vocab& vocab) {
  std::unique_ptr<WpmModel> m(new WpmModel());
  m->vocab_ = &vocab;
  ASSIGN_OR_RETURN(m->space_, UnicodeRegex::Compile(R"(\s)"));
  ASSIGN_OR_RETURN(m->control_, UnicodeRegex::Compile(R"(\p{C})"));
  ASSIGN_OR_RETURN(m->mark_, UnicodeRegex::Compile(R"(\p{Mn})"));
  ASSIGN_OR_RETURN(m->punct_, UnicodeRegex::Compile(R"(\p{P})"));
  return m;
}

WpmModel::CharClass WpmModel::Classify(uint32_t cp) const {
  // As Hugging Face's BertNormalizer: control characters (Unicode C*, but not \t \n \r) are
  // dropped before whitespace is looked for, so \v, \f and U+0085 are dropped, not spaces.
  if (cp < 0x80) {
    if (cp == '\t' || cp == '\n' || cp == '\r' || cp == ' ') return CharClass::kWhitespace;
    if (std::iscntrl(static_cast<int>(cp))) return CharClass::kControl;
    if (std::ispunct(static_cast<int>(cp))) return CharClass::kPunct;  // ASCII symbols too
    return CharClass::kOther;
  }
  const std::string s = utf8::Encode(cp);
  if (control_->FullMatch(s)) return CharClass::kControl;
  if (space_->FullMatch(s)) return CharClass::kWhitespace;
  if (mark_->FullMatch(s)) return CharClass::kMark;
  if (punct_->FullMatch(s)) return CharClass::kPunct;
  return CharClass::kOther;
}

std::vector<std::string> WpmModel::Words(std::string_view text) const {
  // Normalize to code points: whitespace -> ' ', controls dropped, CJK spaced, then accents
  // stripped and lowercased.
  std::u32string norm, tmp;
  for (size_t pos = 0; pos < text.size();) {
    const uint32_t cp = utf8::DecodeAt(text, &pos);
    const CharClass c = Classify(cp);
    if (cp == 0 || cp == utf8::kReplacement || c == CharClass::kControl) continue;
    if (c == CharClass::kWhitespace) {
      norm.push_back(' ');
      continue;
    }
    tmp.clear();
    if (vocab_->strip_accents) {
      if (c == CharClass::kMark) continue;
      unicode_data::AppendStripAccents(cp, &tmp);
    } else {
      tmp.push_back(cp);
    }
    const bool cjk = IsCjk(cp);
    if (cjk) norm.push_back(' ');
    for (char32_t t : tmp) {
      if (vocab_->lowercase) {
        unicode_data::AppendLowercase(t, &norm);
      } else {
        norm.push_back(t);
      }
    }
    if (cjk) norm.push_back(' ');
  }
  // Split on whitespace (dropped) and punctuation (each a word of its own).
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : norm) {
    const CharClass c = cp == ' ' ? CharClass::kWhitespace : Classify(cp);
    if (c == CharClass::kWhitespace) {
      flush();
    } else if (c == CharClass::kPunct) {
      flush();
      utf8::Append(cp, &word);
      flush();
    } else {
      utf8::Append(cp, &word);
    }
  }
  flush();
  return words;
}

void WpmModel::EncodeWord(const std::string& word, std::vector<TokenId>* out) const {
  size_t chars = 0;
  for (char ch : word) chars += (static_cast<uint8_t>(ch) & 0xC0) != 0x80;
  const size_t start = out->size();
  if (chars <= kMaxWordChars) {
    const std::string w = kWordStart + word;
    const size_t max_len = vocab_->max_token_bytes;
    for (size_t i = 0; i < w.size();) {
      TokenId found = kNoToken;
      size_t j = std::min(w.size(), i + max_len);
      for (; j > i; --j) {
        // Only whole characters: j must not cut a UTF-8 sequence.
        if (j < w.size() && (static_cast<uint8_t>(w[j]) & 0xC0) == 0x80) continue;
        found = vocab_->Find(std::string_view(w).substr(i, j - i));
        if (found != kNoToken) break;
      }
      if (found == kNoToken) {
        out->resize(start);
        break;
      }
      out->push_back(found);
      i = j;
    }
  }
  if (out->size() == start && vocab_->unk != kNoToken) out->push_back(vocab_->unk);
}

void WpmModel::Encode(std::string_view text, std::vector<TokenId>* out) const {
  for (const std::string& word : Words(text)) EncodeWord(word, out);
}

}  // namespace forge
