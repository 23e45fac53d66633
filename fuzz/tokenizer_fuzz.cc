// libFuzzer target for the tokenizers: any bytes encode (every vocab kind) without crashing, decode
// never emits invalid UTF-8, streaming equals one-shot decode, lossless vocabs give the text back.
// Input: byte 0 picks a vocab, byte 1 flags, then text. The vocabs: those of $FORGE_TESTDATA (or
// ../shared/testdata) when that folder exists, then each GGUF in $FORGE_FUZZ_VOCABS (paths split by
// ':'; "PATH=lossless" also checks the round trip), e.g. the synthetic ones that
// forge_make_fuzz_seeds writes to .fuzz/seeds/vocabs (scripts/fuzz.sh passes them).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "gguf/gguf_file.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

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

void Load(const std::string& path, bool lossless) {
  auto file = forge::GgufFile::Open(path);
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
  const std::string testdata = TestDataDir();
  if (std::filesystem::is_directory(testdata)) {
    Load(testdata + "/vocab/ggml-vocab-llama-spm.gguf", true);
    Load(testdata + "/vocab/ggml-vocab-gpt-2.gguf", true);
    Load(testdata + "/vocab/ggml-vocab-bert-bge.gguf", false);
    Load(testdata + "/vocab/ggml-vocab-deepseek-llm.gguf", true);
    Load(testdata + "/vocab/ggml-vocab-phi-3.gguf", false);   // user-defined </s> eats spaces
    Load(testdata + "/vocab/ggml-vocab-falcon.gguf", false);  // lacks tokens for some control bytes
    Load(testdata + "/models/stories260K.gguf", true);
  } else {
    std::fprintf(stderr, "tokenizer_fuzz: no test data at %s; only $FORGE_FUZZ_VOCABS\n",
                 testdata.c_str());
  }
  if (const char* env = std::getenv("FORGE_FUZZ_VOCABS"); env != nullptr) {
    const std::string list = env;
    size_t at = 0;
    while (at < list.size()) {
      size_t end = list.find(':', at);
      if (end == std::string::npos) end = list.size();
      std::string entry = list.substr(at, end - at);
      at = end + 1;
      if (entry.empty()) continue;
      const std::string suffix = "=lossless";
      const bool lossless = entry.size() > suffix.size() &&
                            entry.compare(entry.size() - suffix.size(), suffix.size(), suffix) == 0;
      if (lossless) entry.resize(entry.size() - suffix.size());
      Load(entry, lossless);
    }
  }
  if (g_vocabs->empty()) {
    std::fprintf(stderr,
                 "tokenizer_fuzz: no vocab: give ../shared/testdata, $FORGE_TESTDATA or "
                 "$FORGE_FUZZ_VOCABS (scripts/fuzz.sh does)\n");
    std::abort();
  }
  std::fprintf(stderr, "tokenizer_fuzz: %zu vocabs\n", g_vocabs->size());
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
