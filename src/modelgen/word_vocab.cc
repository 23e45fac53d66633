// The word vocabulary of synthetic models: SentencePiece pieces whose generated tokens are all
// English words, so a peaked model's greedy text is readable (make-model --vocab words).
#include "modelgen/word_vocab.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace forge {
namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;

// Common English words, written for Forge's synthetic models; each becomes the token "\u2581word".
constexpr const char* kWords =
    "the of and to in is it that was for on are as with his they at be this from have or by one "
    "had not but what all were when we there can an your which their said if do will each about "
    "how up out them then she many some so these would other into has more her two like him see "
    "time could no make than first been its who now people my made over did down only way find "
    "use may water long little very after words called just where most know get through back "
    "much go good new write our me man too any day same right look think also around another "
    "came come work three word must because does part even place well such here take why things "
    "help put years different away again off went old number great tell men say small every "
    "found still between name should home big give air line set own under read last never us "
    "left end along while might next sound below saw something thought both few those always "
    "looked show large often together asked house world going want school important until form "
    "food keep children feet land side without boy once animals life enough took sometimes four "
    "head above kind began almost live page got earth need far hand high year mother light parts "
    "country father let night following picture being study second eyes soon times story boys "
    "since white days ever paper hard near sentence better best across during today others "
    "however sure means knew try told young miles sun ways thing whole hear example heard "
    "several change answer room sea against top turned learn point city play toward five using "
    "himself usually money seen car morning given body family later turn move face door cut done "
    "group true half red fish plants living black eat short united run book gave order open "
    "ground cold really table remember tree course front american space inside ago making "
    "hundred stood sky slowly river garden quiet bright gentle green blue golden silver window "
    "forest mountain stone bird song summer winter autumn spring flower rain cloud wind warm "
    "soft sweet clear deep wide calm wild happy simple early late round quick bread milk honey "
    "apple orange lemon coffee tea sugar salt butter cheese village road bridge field farm horse "
    "cat dog rabbit fox bear wolf owl deer mouse lamp candle letter pencil basket blanket pillow "
    "kitchen chair meadow valley hill lake pond ocean island shore harbor boat ship sail wave "
    "sand shell star moon planet evening dawn noon midnight shadow music dance poem dream "
    "journey friend neighbor teacher baker farmer sailor painter singer doctor child brother "
    "sister uncle aunt cousin king queen knight castle tower gate wall path lantern map key "
    "clock bell drum flute violin piano guitar colour purple yellow brown grey pink velvet "
    "cotton wool linen silk glass iron copper wooden careful brave curious patient polite honest "
    "proud tired hungry thirsty sleepy busy lazy lucky fair loud silent hidden ancient modern "
    "tiny huge narrow heavy smooth rough fresh ripe sour bitter salty spicy tender quietly "
    "softly gladly quickly gently finally suddenly nearly rarely forward upward outside beneath "
    "beyond within among behind beside laugh smile whisper sing walk wander climb swim fly carry "
    "bring build paint bake plant grow gather fold wrap close listen watch wait rest sleep wake "
    "begin finish follow lead share borrow lend forget wonder believe hope wish upon a ";

// Characters a prompt is likely to hold, as single pieces (after the byte tokens).
constexpr const char* kChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\":;-()";

std::vector<std::string> Words() {
  std::vector<std::string> out;
  std::istringstream in(kWords);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Layout {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  int64_t first_word = 0;
};

// <unk> <s> </s> <|im_start|> <|im_end|>, the 256 byte tokens, "\u2581" and the characters, every
// proper prefix of a "\u2581word" that is not itself a word (so prompts of these words merge into
// them), then the words.
Layout MakeLayout() {
  Layout l;
  for (const char* s : {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"}) {
    l.tokens.push_back(s);
    l.types.push_back(l.tokens.size() == 1 ? kUnknown : kControl);
  }
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    l.tokens.push_back(buf);
    l.types.push_back(kByte);
  }
  const std::string space = "\xe2\x96\x81";  // U+2581
  std::set<std::string> seen(l.tokens.begin(), l.tokens.end());
  auto add = [&](const std::string& piece) {
    if (!seen.insert(piece).second) return;
    l.tokens.push_back(piece);
    l.types.push_back(kNormal);
  };
  add(space);
  for (const char* c = kChars; *c; ++c) add(std::string(1, *c));
  const std::vector<std::string> words = Words();
  std::set<std::string> word_pieces;
  for (const std::string& w : words) word_pieces.insert(space + w);
  for (const std::string& w : words) {
    for (size_t n = 2; n < w.size() + 1; ++n) {
      const std::string prefix = space + w.substr(0, n - 1);
      if (!word_pieces.count(prefix)) add(prefix);
    }
  }
  l.first_word = static_cast<int64_t>(l.tokens.size());
  for (const std::string& w : words) add(space + w);
  return l;
}

}  // namespace

WordVocabInfo WordVocabShape() {
  const Layout l = MakeLayout();
  return {static_cast<int64_t>(l.tokens.size()), l.first_word};
}

MetadataList WordVocab() {
  Layout l = MakeLayout();
  // Longer pieces score higher, so merges build whole words.
  std::vector<float> scores(l.tokens.size(), 0.0f);
  for (size_t i = 0; i < l.tokens.size(); ++i) {
    if (l.types[i] == kNormal) scores[i] = -1000.0f + static_cast<float>(l.tokens[i].size());
  }
  constexpr const char* kTemplate =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\\n' }}{% endif %}";
  return {{"tokenizer.ggml.model", GgufValue::String("llama")},
          {"tokenizer.ggml.tokens", GgufValue::StringArray(l.tokens)},
          {"tokenizer.ggml.scores", GgufValue::F32Array(scores)},
          {"tokenizer.ggml.token_type", GgufValue::I32Array(l.types)},
          {"tokenizer.ggml.bos_token_id", GgufValue::U32(1)},
          {"tokenizer.ggml.eos_token_id", GgufValue::U32(2)},
          {"tokenizer.ggml.eot_token_id", GgufValue::U32(4)},
          {"tokenizer.ggml.unknown_token_id", GgufValue::U32(0)},
          {"tokenizer.ggml.add_bos_token", GgufValue::Bool(true)},
          {"tokenizer.chat_template", GgufValue::String(kTemplate)}};
}

}  // namespace forge
