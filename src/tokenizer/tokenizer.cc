// Tokenizer: builds the model for the vocab's kind and runs encode: special-token split, then
// per text fragment the space prefix / escaping, pre-tokenizer and model.
#include "tokenizer/tokenizer.h"

#include "gguf/gguf_file.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/wpm_model.h"

namespace forge {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581

void EscapeSpaces(std::string_view text, std::string* out) {
  for (char c : text) {
    if (c == ' ') {
      out->append(kSpaceMarker);
    } else {
      out->push_back(c);
    }
  }
}

std::string UnescapeSpaces(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      out.push_back(' ');
      pos += kSpaceMarker.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// "<0xNN>" -> the byte; false when text is not of that form.
bool ParseByteToken(std::string_view text, uint8_t* byte) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]), lo = hex(text[4]);
  if (hi < 0 || lo < 0) return false;
  *byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  auto vocab = Vocab::FromGguf(file);
  if (!vocab.ok()) return vocab.status().WithContext(file.path());
  return FromVocab(std::move(vocab).value());
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromVocab(Vocab vocab) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->vocab_ = std::move(vocab);
  RETURN_IF_ERROR(t->Init());
  return t;
}

Status Tokenizer::Init() {
  specials_ = std::make_unique<SpecialTokenSplitter>(vocab_);
  switch (vocab_.kind) {
    case TokenizerKind::kSpm:
      spm_ = std::make_unique<SpmModel>(vocab_);
      break;
    case TokenizerKind::kWpm: {
      ASSIGN_OR_RETURN(wpm_, WpmModel::Create(vocab_));
      break;
    }
    case TokenizerKind::kBpe: {
      const BpePreset* preset = FindBpePreset(vocab_.pre);
      if (preset == nullptr) {
        return UnimplementedError("tokenizer.ggml.pre = '" + vocab_.pre +
                                  "': unknown pre-tokenizer (known: " + KnownBpePresetNames() +
                                  ")");
      }
      pre_patterns_ = preset->patterns;
      byte_encode_ = preset->byte_encode;
      ASSIGN_OR_RETURN(pre_, PreTokenizer::Create(pre_patterns_));
      ASSIGN_OR_RETURN(BpeModel model,
                       BpeModel::Build(vocab_, byte_encode_, preset->ignore_merges));
      bpe_ = std::make_unique<BpeModel>(std::move(model));
      break;
    }
  }
  // The bytes of every token, as llama.cpp's token_to_piece(special = true).
  pieces_.resize(vocab_.tokens.size());
  for (TokenId id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.tokens[id];
    const uint32_t attr = vocab_.attrs[id];
    std::string& piece = pieces_[id];
    uint8_t byte;
    if (attr & (kAttrControl | kAttrUnknown | kAttrUserDefined)) {
      piece = text;
    } else if (attr & kAttrNormal) {
      if (vocab_.kind != TokenizerKind::kBpe || vocab_.escape_whitespaces) {
        piece = UnescapeSpaces(text);
      } else if (!byte_unicode::TextToBytes(text, &piece)) {
        piece = text;  // not byte-level text: shown as it is
      }
    } else if ((attr & kAttrByte) && ParseByteToken(text, &byte)) {
      piece = std::string(1, static_cast<char>(byte));
    }
  }
  return Status::Ok();
}

void Tokenizer::EncodeText(std::string_view text, bool prefix_space,
                           std::vector<TokenId>* out) const {
  switch (vocab_.kind) {
    case TokenizerKind::kSpm: {
      std::string escaped;
      escaped.reserve(text.size() + 8);
      if (prefix_space) escaped.append(kSpaceMarker);
      EscapeSpaces(text, &escaped);
      spm_->Encode(escaped, out);
      return;
    }
    case TokenizerKind::kWpm:
      wpm_->Encode(text, out);
      return;
    case TokenizerKind::kBpe: {
      std::string escaped;
      if (vocab_.escape_whitespaces) {
        EscapeSpaces(text, &escaped);
        text = escaped;
      }
      thread_local std::vector<std::string_view> pieces;
      pieces.clear();
      pre_->Split(text, &pieces);
      for (std::string_view piece : pieces) bpe_->EncodePiece(piece, out);
      return;
    }
  }
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  return EncodeImpl(text, add_special, parse_special, {});
}

std::vector<TokenId> Tokenizer::EncodeWithPlainSpans(std::string_view text,
                                                     std::span<const TextSpan> plain) const {
  return EncodeImpl(text, /*add_special=*/false, /*parse_special=*/true, plain);
}

std::vector<TextSpan> Tokenizer::FindControlText(std::string_view text) const {
  std::vector<SpecialMatch> matches;
  specials_->FindMatches(text, /*parse_special=*/true, &matches);
  std::vector<TextSpan> spans;
  for (const SpecialMatch& m : matches) {
    if (!specials_->AlwaysParsed(m.token)) spans.push_back(m.span);
  }
  return spans;
}

std::vector<TokenId> Tokenizer::EncodeImpl(std::string_view text, bool add_special,
                                           bool parse_special,
                                           std::span<const TextSpan> plain) const {
  std::vector<TokenId> out;
  if (add_special && vocab_.add_bos && vocab_.bos != kNoToken) out.push_back(vocab_.bos);
  std::vector<Fragment> fragments;
  specials_->Split(text, parse_special, &fragments, plain);
  bool prev_special = true;  // a space prefix goes before text at the start or after a token
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      prev_special = true;
    } else {
      EncodeText(f.text, vocab_.add_space_prefix && prev_special, &out);
      prev_special = false;
    }
  }
  if (add_special) {
    if (vocab_.add_eos && vocab_.eos != kNoToken) out.push_back(vocab_.eos);
    if (vocab_.kind == TokenizerKind::kWpm && vocab_.add_sep && vocab_.sep != kNoToken) {
      out.push_back(vocab_.sep);
    }
  }
  return out;
}

std::string Tokenizer::TokenToPiece(TokenId id, bool special) const {
  if (!vocab_.Valid(id)) return "";
  if (!special && (vocab_.attrs[id] & (kAttrControl | kAttrUnknown))) return "";
  return pieces_[id];
}

std::vector<std::string> Tokenizer::PreTokenize(std::string_view text) const {
  std::vector<std::string> result;
  if (pre_ == nullptr) return result;
  std::vector<std::string_view> pieces;
  pre_->Split(text, &pieces);
  result.assign(pieces.begin(), pieces.end());
  return result;
}

}  // namespace forge
