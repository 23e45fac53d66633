// Tables of the GPT-2 byte-to-unicode mapping, built once.
#include "tokenizer/byte_unicode.h"

#include <array>

#include "base/utf8.h"

namespace forge::byte_unicode {
namespace {

constexpr uint32_t kNoByte = 0xFFFF;

struct Tables {
  std::array<std::string, 256> text;
  std::array<uint32_t, 324> byte_of_cp;  // code points 0..323 -> byte, or kNoByte
  Tables() {
    byte_of_cp.fill(kNoByte);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      text[b] = utf8::Encode(cp);
      byte_of_cp[cp] = static_cast<uint32_t>(b);
    }
  }
};

const Tables& Get() {
  static const Tables* tables = new Tables();
  return *tables;
}

}  // namespace

const std::string& ByteToText(uint8_t byte) { return Get().text[byte]; }

bool TextToBytes(std::string_view text, std::string* out) {
  const Tables& t = Get();
  std::string bytes;
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = utf8::DecodeAt(text, &pos);
    if (cp >= t.byte_of_cp.size() || t.byte_of_cp[cp] == kNoByte) return false;
    bytes.push_back(static_cast<char>(t.byte_of_cp[cp]));
  }
  out->append(bytes);
  return true;
}

}  // namespace forge::byte_unicode
