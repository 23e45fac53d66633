// libFuzzer target for the tokenizers: any bytes encode (every vocab kind) without crashing, decode
// never emits invalid UTF-8, streaming equals one-shot decode, lossless vocabs give the text back.
// Input: byte 0 picks a vocab ($FORGE_TESTDATA or ../shared/testdata), byte 1 flags, then text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

struct Loaded {
  std::unique_ptr<forge::Tokenizer> tok;
  bool lossless;  // decode(encode(valid UTF-8)) == text without special parsing
};

std::vector<Loaded>* g_vocabs = nullptr;

std::string TestDataDir() {
  const char* env = std::getenv("FORGE_TESTDATA");
  if (env != nullptr && *env) return env;
  std::string here = __FILE__;  // <checkout>/fuzz/tokenizer_fuzz.cc
  here = here.substr(0, here.rfind('/'));
  return here + "/../../shared/testdata";
}

void Load(const std::string& relative, bool lossless) {
  auto file = forge::GgufFile::Open(TestDataDir() + "/" + relative);
  if (!file.ok()) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", file.status().ToString().c_str());
    std::abort();
  }
  auto tok = forge::Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", tok.status().ToString().c_str());
    std::abort();
  }
  g_vocabs->push_back({std::move(tok).value(), lossless});
}

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_vocabs = new std::vector<Loaded>();
  Load("vocab/ggml-vocab-llama-spm.gguf", true);
  Load("vocab/ggml-vocab-gpt-2.gguf", true);
  Load("vocab/ggml-vocab-bert-bge.gguf", false);
  Load("vocab/ggml-vocab-deepseek-llm.gguf", true);
  Load("vocab/ggml-vocab-phi-3.gguf", false);   // user-defined </s> eats spaces
  Load("vocab/ggml-vocab-falcon.gguf", false);  // lacks tokens for some control bytes
  Load("models/stories260K.gguf", true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Loaded& v = (*g_vocabs)[data[0] % g_vocabs->size()];
  const forge::Tokenizer& tok = *v.tok;
  const uint8_t flags = data[1];
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  const bool add_special = flags & 1, parse_special = flags & 2;
  const forge::DecodeOptions options{.special = (flags & 4) != 0,
                                     .strip_leading_space = (flags & 8) == 0};

  const std::vector<forge::TokenId> ids = tok.Encode(text, add_special, parse_special);
  for (forge::TokenId id : ids) Check(tok.vocab().Valid(id));
  const std::string decoded = tok.Decode(ids, options);
  Check(forge::utf8::IsValid(decoded));
  const bool marker = text.find("\xE2\x96\x81") != std::string::npos;  // U+2581 reads as a space
  if (v.lossless && !parse_special && !options.special && options.strip_leading_space && !marker &&
      forge::utf8::IsValid(text)) {
    Check(decoded == text);
  }

  // The input read as token ids (any values, out of range included), decoded in a stream.
  std::vector<forge::TokenId> raw;
  for (size_t i = 2; i + 2 <= size; i += 2) {
    const int value = data[i] | (data[i + 1] << 8);
    raw.push_back(static_cast<forge::TokenId>(value % (tok.vocab().size() + 16)) - 8);
  }
  forge::StreamingDetokenizer stream(tok, options);
  std::string streamed;
  for (forge::TokenId id : raw) {
    const std::string chunk = stream.Push(id);
    Check(forge::utf8::IsValid(chunk));
    Check(stream.pending_bytes() <= 3);
    streamed += chunk;
  }
  const std::string tail = stream.Finish();
  Check(forge::utf8::IsValid(tail));
  Check(streamed + tail == tok.Decode(raw, options));
  return 0;
}
