// forge embed -m MODEL.gguf (-p TEXT | --file TEXTS | --ids-file IDS): the embedding of each text
// (one per line of TEXTS; "-": stdin) or token-id list (one comma-separated list per line of IDS,
// used verbatim: a file without a tokenizer embeds too) as one JSON array per line on stdout,
// through the engine as the server runs it (each line its own request, many at once);
// --dimensions N keeps the first N values, re-normalized. Lines are read, embedded and printed in
// groups, so a long file streams.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "engine/engine.h"
#include "model_flags.h"
#include "progress_bar.h"
#include "server/embedding_json.h"
#include "server/embeddings_request.h"
#include "tokenizer/tokenizer.h"

namespace forge::cli {
namespace {

// Lines embedded at once (one engine request each): the engine batches them by its step budget.
constexpr size_t kGroup = 256;

struct Args {
  std::string model, device = "auto", text, file;
  bool ids = false;        // file's lines are token ids
  int64_t n_vocab = 0;     // the model's (set once loaded)
  int64_t dimensions = 0;  // 0: every value
  bool truncate = false;
  int64_t ctx = 0;
  int parallel = 0, batch_tokens = 0;  // 0: as `forge serve` picks them
  int64_t kv_mb = 0;
  double gpu_memory_fraction = 0.9;
  ModelFlags model_flags;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "forge embed: %s\n", what.c_str());
  return 1;
}

struct Counts {
  int64_t texts = 0, tokens = 0;
};

// Embeds lines[i] (line numbers first_line + i) and prints their vectors in order; an error (a
// line that cannot be embedded, a failed step) is returned before anything of the group prints.
// The ids of one --ids-file line ("1,2,3"), each in [0, n_vocab); at most `limit` of them.
StatusOr<std::vector<int32_t>> ParseIds(const std::string& line, int64_t n_vocab, int64_t limit,
                                        const std::string& what) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at <= line.size()) {
    const size_t end = std::min(line.find(',', at), line.size());
    const std::string item = line.substr(at, end - at);
    char* stop = nullptr;
    const long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || v < 0 || v >= n_vocab) {
      return InvalidArgumentError(what + ": '" + item + "' is not a token id below " +
                                  std::to_string(n_vocab));
    }
    if (static_cast<int64_t>(ids.size()) == limit) {
      return OutOfRangeError(what + " has more than the " + std::to_string(limit) +
                             " tokens the model embeds at once");
    }
    ids.push_back(static_cast<int32_t>(v));
    at = end + 1;
  }
  return ids;
}

Status EmbedGroup(Engine& engine, const Tokenizer* tokenizer, const Args& a,
                  const std::vector<std::string>& lines, int64_t first_line, Counts* counts) {
  struct Out {
    std::vector<float> vector;
    Status status = CancelledError("not run");
  };
  std::vector<Out> outs(lines.size());
  std::vector<std::vector<int32_t>> ids(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string what = a.file.empty() ? "the text" : "line " + std::to_string(first_line + i);
    if (lines[i].empty()) return InvalidArgumentError(what + " is empty: nothing to embed");
    if (a.ids) {
      ASSIGN_OR_RETURN(ids[i], ParseIds(lines[i], a.n_vocab, engine.max_embed_tokens(), what));
      continue;
    }
    server::PromptInput in{lines[i], {}, false};
    auto t = server::EmbeddingTokens(*tokenizer, in, engine.max_embed_tokens(), a.truncate, what);
    if (!t.ok()) {
      if (t.status().code() == StatusCode::kOutOfRange) {
        return OutOfRangeError(t.status().message() + " (--truncate cuts texts to fit)");
      }
      return t.status();
    }
    ids[i] = std::move(*t);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    counts->tokens += static_cast<int64_t>(ids[i].size());
    EngineRequest r;
    r.embed = true;
    r.prompt_ids = std::move(ids[i]);
    r.on_event = [&outs, i](RequestEvent ev) {
      if (!ev.finished) return;
      outs[i].status = ev.status;
      outs[i].vector = std::move(ev.embedding);
    };
    auto h = engine.Submit(std::move(r));
    if (!h.ok()) outs[i].status = h.status();
  }
  RETURN_IF_ERROR(engine.RunUntilIdle());
  const size_t width = static_cast<size_t>(engine.embedding_dim());
  std::string text;
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string what = a.file.empty() ? "the text" : "line " + std::to_string(first_line + i);
    if (!outs[i].status.ok()) return outs[i].status.WithContext(what);
    if (outs[i].vector.size() != width) {
      return InternalError(what + ": the engine gave " + std::to_string(outs[i].vector.size()) +
                           " values for an embedding of " + std::to_string(width));
    }
    const size_t dims = a.dimensions > 0 ? static_cast<size_t>(a.dimensions) : width;
    if (dims < width) {
      server::AppendJsonFloats(server::ShortenEmbedding(outs[i].vector, dims), &text);
    } else {
      server::AppendJsonFloats(outs[i].vector, &text);
    }
    text.push_back('\n');
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  counts->texts += static_cast<int64_t>(lines.size());
  return Status::Ok();
}

int Embed(Args a) {
  if (a.text.empty() == a.file.empty()) return Fail("give -p TEXT or --file TEXTS (\"-\": stdin)");
  std::ifstream file;
  std::istream* in = nullptr;
  if (a.file == "-") {
    in = &std::cin;
  } else if (!a.file.empty()) {
    file.open(a.file, std::ios::binary);
    if (!file) return Fail("cannot read " + a.file);
    in = &file;
  }
  auto loaded = LoadModelOn(a.model, a.device, a.model_flags, StderrProgressBar("loading"));
  if (!loaded.ok()) return Fail(loaded.status().ToString());
  ModelRunner& model = *(*loaded)->model;
  a.n_vocab = model.config().n_vocab;
  auto tokenizer = Tokenizer::FromGguf(model.file());
  if (!tokenizer.ok() && !a.ids) return Fail(tokenizer.status().ToString());
  const Tokenizer* tok = tokenizer.ok() ? tokenizer->get() : nullptr;
  const bool gpu = HasDeviceMemory(model.backend());
  EngineOptions opt;
  opt.ctx_size = a.ctx;
  opt.max_num_seqs = a.parallel > 0 ? a.parallel : gpu ? 256 : 16;
  opt.max_num_batched_tokens = std::max(a.batch_tokens > 0 ? a.batch_tokens
                                        : gpu              ? 2048
                                                           : 512,
                                        opt.max_num_seqs);
  opt.kv_cache_bytes = KvCacheBytes(a.kv_mb, model.backend());
  opt.gpu_memory_fraction = a.gpu_memory_fraction;
  auto engine = Engine::Create(model, tok, opt);
  if (!engine.ok()) return Fail(engine.status().ToString());
  if (!(*engine)->embeds()) {
    return Fail(a.model +
                " does not embed: its GGUF has no pooling_type (an embedding model's "
                "names how its vectors are pooled: 1 mean, 2 cls, 3 last)");
  }
  const int64_t width = (*engine)->embedding_dim();
  if (a.dimensions > width) {
    return Fail("--dimensions " + std::to_string(a.dimensions) + " must be in [1, " +
                std::to_string(width) + "] (the model's embeddings have " + std::to_string(width) +
                " values)");
  }
  const auto start = std::chrono::steady_clock::now();
  Counts counts;
  Status s;
  if (in == nullptr) {
    s = EmbedGroup(**engine, tok, a, {a.text}, 1, &counts);
  } else {
    std::vector<std::string> group;
    int64_t first = 1;
    for (std::string line; s.ok() && std::getline(*in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      group.push_back(std::move(line));
      if (group.size() == kGroup) {
        s = EmbedGroup(**engine, tok, a, group, first, &counts);
        first += static_cast<int64_t>(group.size());
        group.clear();
      }
    }
    if (s.ok() && !group.empty()) s = EmbedGroup(**engine, tok, a, group, first, &counts);
    if (s.ok() && counts.texts == 0) {
      s = InvalidArgumentError((a.file == "-" ? std::string("stdin") : a.file) + " holds no lines");
    }
  }
  if (!s.ok()) return Fail(s.ToString());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "forge embed: %lld texts, %lld tokens in %.2f s (%.1f tokens/s), %lld values each\n",
               static_cast<long long>(counts.texts), static_cast<long long>(counts.tokens), seconds,
               counts.tokens / std::max(seconds, 1e-9),
               static_cast<long long>(a.dimensions > 0 ? a.dimensions : width));
  return 0;
}

}  // namespace

void AddEmbedCommand(CLI::App& app, CommandRunner* runner) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "embed", "Embed texts with an embedding model: one JSON array per text on stdout");
  AddModelAndDevice(cmd, &a->model, &a->device);
  auto* text = cmd->add_option("-p,--prompt", a->text, "One text");
  auto* file = cmd->add_option("--file", a->file, "One text per line (\"-\": stdin)");
  auto* ids = cmd->add_option("--ids-file", a->file,
                              "One comma-separated list of token ids per line (\"-\": stdin)");
  text->excludes(file);
  file->excludes(text);
  ids->excludes(text);
  ids->excludes(file);
  cmd->add_option("--dimensions", a->dimensions,
                  "Keep the first N values of each vector, re-normalized to unit length")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--truncate", a->truncate,
                "Cut texts longer than the model embeds at once instead of failing");
  cmd->add_option("-c,--ctx-size", a->ctx, "Context size (0: the model's)");
  cmd->add_option("--parallel", a->parallel,
                  "Most texts in one step (0: 256 on a GPU, 16 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-tokens", a->batch_tokens,
                  "Most tokens per engine step, and so per text (0: 2048 on a GPU, 512 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-cache-mb", a->kv_mb,
                  "KV cache budget in MiB (0: on a GPU, planned from --gpu-memory-fraction; on "
                  "the CPU, 1024)");
  cmd->add_option("--gpu-memory-fraction", a->gpu_memory_fraction,
                  "Fraction of the GPU's memory Forge may use in all, in (0, 1]");
  AddModelFlags(cmd, &a->model_flags);
  cmd->callback([a, runner, ids] {
    a->ids = ids->count() > 0;
    *runner = [a]() -> int { return Embed(*a); };
  });
}

}  // namespace forge::cli
