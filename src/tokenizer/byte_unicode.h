// The GPT-2 byte-to-unicode mapping of byte-level BPE: each byte is written as one printable
// code point (printable Latin-1 bytes as themselves, the rest as U+0100.. in byte order).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace forge::byte_unicode {

// UTF-8 text of the code point that stands for a byte.
const std::string& ByteToText(uint8_t byte);
// Appends the bytes a byte-level token text stands for; returns false (appending nothing for
// it) when some code point of text is not in the mapping.
bool TextToBytes(std::string_view text, std::string* out);

}  // namespace forge::byte_unicode
