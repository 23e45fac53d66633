// forge bench --mask -m MODEL: the host time of constrained decoding's per-token work (the
// grammar matcher's FillMask, then AcceptToken) with the model's own vocabulary, over random
// generations of a nested JSON schema (or --schema FILE): median and p99 per token, cold (a new
// grammar: nothing memoized) and warm (later generations of the same grammar, as a server's
// cache keeps it), beside the floor of writing one mask at the host's copy bandwidth. The engine
// computes these masks while a step's forward runs on the device, so a figure below the decode
// step time costs nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/memory_floor.h"
#include "gguf/gguf_file.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

namespace forge::cli {

bool WriteJson(const std::string& path, const nlohmann::json& j);

namespace {

using Clock = std::chrono::steady_clock;

// An order with nested objects, arrays of objects, enums, bounded strings and numbers, a date
// and an optional field: the shapes of a typical extraction schema.
const char* kDefaultSchema = R"({
  "type": "object",
  "properties": {
    "order_id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"},
    "date": {"type": "string", "format": "date"},
    "customer": {"type": "object", "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 40},
      "email": {"type": "string", "format": "email"},
      "tier": {"enum": ["free", "pro", "enterprise"]}},
      "required": ["name", "tier"]},
    "items": {"type": "array", "minItems": 1, "maxItems": 6, "items": {"type": "object",
      "properties": {
        "sku": {"type": "string", "maxLength": 12},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
        "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
      "required": ["sku", "quantity", "price"]}},
    "paid": {"type": "boolean"},
    "notes": {"type": ["string", "null"], "maxLength": 80}
  },
  "required": ["order_id", "date", "customer", "items", "paid"]
})";

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

struct Series {
  std::vector<double> mask_us, accept_us;
  int64_t tokens = 0, ended = 0;
};

// One random generation: at each step FillMask, then a uniformly random allowed token (an end
// token as soon as one is allowed after `min_len` tokens, so generations finish).
void Generate(const std::shared_ptr<const Grammar>& grammar, const TokenVocabView& vocab,
              std::mt19937_64& rng, int max_tokens, Series* s) {
  GrammarMatcher m(grammar);
  std::vector<uint32_t> mask(vocab.mask_words());
  std::vector<int32_t> allowed;
  for (int step = 0; step < max_tokens; ++step) {
    const auto t0 = Clock::now();
    m.FillMask(vocab, mask.data());
    const auto t1 = Clock::now();
    s->mask_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    allowed.clear();
    int32_t end = -1;
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
        const int32_t id = static_cast<int32_t>(w * 32) + __builtin_ctz(bits);
        if (vocab.IsEnd(id)) {
          end = id;
        } else {
          allowed.push_back(id);
        }
      }
    }
    const int32_t pick = end >= 0 && (allowed.empty() || step >= max_tokens / 2)
                             ? end
                             : (allowed.empty() ? -1 : allowed[rng() % allowed.size()]);
    if (pick < 0) break;
    const auto t2 = Clock::now();
    const bool ok = m.AcceptToken(vocab, pick);
    s->accept_us.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - t2).count());
    ++s->tokens;
    if (!ok || m.IsTerminated()) {
      s->ended += ok;
      break;
    }
  }
}

nlohmann::json Summary(const Series& s) {
  return {{"tokens", s.tokens},
          {"generations_ended", s.ended},
          {"mask_us_median", Percentile(s.mask_us, 0.5)},
          {"mask_us_p99", Percentile(s.mask_us, 0.99)},
          {"mask_us_max", Percentile(s.mask_us, 1.0)},
          {"accept_us_median", Percentile(s.accept_us, 0.5)},
          {"accept_us_p99", Percentile(s.accept_us, 0.99)}};
}

}  // namespace

int RunMaskBench(const std::string& model_path, const std::string& schema_path, int generations,
                 const std::string& json_path) {
  auto file = GgufFile::Open(model_path);
  if (!file.ok()) {
    std::fprintf(stderr, "forge bench --mask: %s\n", file.status().ToString().c_str());
    return 1;
  }
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "forge bench --mask: %s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  std::string schema = kDefaultSchema;
  if (!schema_path.empty()) {
    std::ifstream in(schema_path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "forge bench --mask: cannot read %s\n", schema_path.c_str());
      return 1;
    }
    schema = text.str();
  }
  const auto v0 = Clock::now();
  const auto vocab = TokenVocabView::FromTokenizer(**tokenizer);
  const double vocab_ms = std::chrono::duration<double, std::milli>(Clock::now() - v0).count();
  const auto g0 = Clock::now();
  auto grammar = GrammarFromJsonSchema(schema);
  if (!grammar.ok()) {
    std::fprintf(stderr, "forge bench --mask: %s\n", grammar.status().ToString().c_str());
    return 1;
  }
  const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - g0).count();
  const CpuCopyBandwidth bw = MeasureCpuCopyBandwidth(int64_t{256} << 20, 1);
  const double mask_bytes = static_cast<double>(vocab->mask_words()) * 4;
  // The floor: one mask written (and the vocabulary's end bits read) at one core's copy rate.
  const double floor_us = 2 * mask_bytes / bw.bytes_per_second * 1e6;

  std::mt19937_64 rng(1);
  Series cold, warm;
  Generate(*grammar, *vocab, rng, 512, &cold);  // the first generation: nothing memoized
  for (int g = 1; g < generations; ++g) Generate(*grammar, *vocab, rng, 512, &warm);

  std::printf("vocabulary: %d tokens (%zu trie nodes), view built in %.1f ms; schema compiled in "
              "%.2f ms\n",
              vocab->size(), vocab->num_trie_nodes(), vocab_ms, compile_ms);
  std::printf("floor: one %.0f KB mask at one core's copy rate (%.1f GB/s): %.2f us\n",
              mask_bytes / 1024, bw.bytes_per_second / 1e9, floor_us);
  std::printf("| %-26s | %7s | %10s | %10s | %10s | %10s |\n", "FillMask per token", "tokens",
              "median us", "p99 us", "max us", "accept us");
  for (const auto& [name, s] : {std::pair<const char*, const Series&>{"cold (first generation)", cold},
                                {"warm (later generations)", warm}}) {
    std::printf("| %-26s | %7lld | %10.2f | %10.2f | %10.2f | %10.2f |\n", name,
                static_cast<long long>(s.tokens), Percentile(s.mask_us, 0.5),
                Percentile(s.mask_us, 0.99), Percentile(s.mask_us, 1.0),
                Percentile(s.accept_us, 0.5));
  }
  if (!json_path.empty()) {
    nlohmann::json j = {{"bench", "mask"},
                        {"model", model_path},
                        {"vocab_tokens", vocab->size()},
                        {"trie_nodes", vocab->num_trie_nodes()},
                        {"vocab_view_ms", vocab_ms},
                        {"schema_compile_ms", compile_ms},
                        {"mask_bytes", mask_bytes},
                        {"host_copy_bytes_per_s", bw.bytes_per_second},
                        {"floor_us", floor_us},
                        {"cold", Summary(cold)},
                        {"warm", Summary(warm)}};
    if (!WriteJson(json_path, j)) return 1;
  }
  return 0;
}

}  // namespace forge::cli
