// Tokenizer throughput: encoding 1 MB of English prose on one core with a byte-level BPE vocab
// (gpt-2) and a SentencePiece vocab (llama-spm); decoding the gpt-2 ids back. Reports bytes/s.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string CheckoutDir() {
  std::string here = __FILE__;  // <checkout>/bench/tokenizer_bench.cc
  return here.substr(0, here.rfind('/')) + "/..";
}

std::string TestDataDir() {
  const char* env = std::getenv("FORGE_TESTDATA");
  return env != nullptr && *env ? env : CheckoutDir() + "/../shared/testdata";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// 1 MB of English: the project's design notes and README (real prose with some code and
// punctuation), repeated; $FORGE_BENCH_TEXT names another file to use instead.
const std::string& EnglishText() {
  static const std::string* text = [] {
    const char* env = std::getenv("FORGE_BENCH_TEXT");
    std::string base = env != nullptr && *env ? ReadFile(env)
                                              : ReadFile(CheckoutDir() + "/../shared/DESIGN.md") +
                                                    "\n" + ReadFile(CheckoutDir() + "/README.md");
    if (base.size() < 1000) base = "Once upon a time, there was a little girl named Lily. ";
    auto* t = new std::string();
    while (t->size() < (1 << 20)) *t += base;
    t->resize(1 << 20);
    return t;
  }();
  return *text;
}

const forge::Tokenizer* Load(const std::string& name) {
  auto file = forge::GgufFile::Open(TestDataDir() + "/vocab/ggml-vocab-" + name + ".gguf");
  if (!file.ok()) return nullptr;
  auto tok = forge::Tokenizer::FromGguf(**file);
  return tok.ok() ? std::move(tok).value().release() : nullptr;
}

void BM_Encode1MB(benchmark::State& state, const std::string& vocab) {
  static std::map<std::string, const forge::Tokenizer*> cache;
  if (!cache.count(vocab)) cache[vocab] = Load(vocab);
  const forge::Tokenizer* tok = cache[vocab];
  if (tok == nullptr) {
    state.SkipWithError(("cannot load vocab " + vocab).c_str());
    return;
  }
  const std::string& text = EnglishText();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(text, false, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(text.size()) / 1e6,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Decode1MB(benchmark::State& state) {
  const forge::Tokenizer* tok = Load("gpt-2");
  if (tok == nullptr) {
    state.SkipWithError("cannot load vocab gpt-2");
    return;
  }
  const auto ids = tok->Encode(EnglishText(), false, false);
  for (auto _ : state) {
    std::string text = tok->Decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * EnglishText().size()));
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(EnglishText().size()) / 1e6,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Encode1MB, gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode1MB, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode1MB)->Unit(benchmark::kMillisecond);

}  // namespace
