// forge run -m MODEL.gguf -p PROMPT [-n N] [sampling flags]: the continuation goes to stdout as it
// is produced; prompt and generation speeds go to stderr at the end.
// forge run -m MODEL.gguf --prompts-file FILE: every line is a prompt; all run concurrently
// through the engine (continuous batching) and each completion is printed with its index.
// --grammar / --grammar-file (GBNF) and --json-schema / --json-schema-file constrain the text.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "engine/engine.h"
#include "engine/generator.h"
#include "grammar/json_schema.h"
#include "model_flags.h"
#include "progress_bar.h"
#include "runtime/backends.h"

namespace forge::cli {
namespace {

struct Args {
  std::string model, prompt, prompts_file, device = "auto";
  int n = 128;
  int64_t ctx = 0;
  double temp = 0.8, top_p = 1.0, min_p = 0.0, repeat = 1.0, presence = 0.0, frequency = 0.0;
  int top_k = 0, min_tokens = 0;
  uint64_t seed = 0;
  bool has_seed = false, ignore_eos = false, no_special = false;
  std::vector<std::string> stop;
  int parallel = 16, batch_tokens = 512;
  int64_t kv_mb = 0;
  double gpu_memory_fraction = 0.9;
  std::string grammar, grammar_file, json_schema, json_schema_file;
  std::shared_ptr<const Grammar> compiled;  // from the four above
  ModelFlags model_flags;
};

// The grammar the flags give (null: none); an error names the flag.
StatusOr<std::shared_ptr<const Grammar>> GrammarOf(const Args& a) {
  auto read = [](const std::string& path) -> StatusOr<std::string> {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return NotFoundError("cannot read " + path);
    return text.str();
  };
  std::string gbnf = a.grammar, schema = a.json_schema;
  if (!a.grammar_file.empty()) {
    ASSIGN_OR_RETURN(gbnf, read(a.grammar_file));
  }
  if (!a.json_schema_file.empty()) {
    ASSIGN_OR_RETURN(schema, read(a.json_schema_file));
  }
  if (!gbnf.empty() && !schema.empty()) {
    return InvalidArgumentError("give a grammar or a JSON schema, not both");
  }
  if (!schema.empty()) {
    auto g = GrammarFromJsonSchema(schema);
    if (!g.ok()) return g.status().WithContext("--json-schema");
    return g;
  }
  if (!gbnf.empty()) {
    auto g = Grammar::FromGbnf(gbnf);
    if (!g.ok()) return g.status().WithContext("--grammar");
    return g;
  }
  return std::shared_ptr<const Grammar>();
}

SamplingParams Params(const Args& a) {
  SamplingParams p;
  p.temperature = a.temp;
  p.top_k = a.top_k;
  p.top_p = a.top_p;
  p.min_p = a.min_p;
  p.repetition_penalty = a.repeat;
  p.presence_penalty = a.presence;
  p.frequency_penalty = a.frequency;
  p.max_tokens = a.n;
  p.min_tokens = a.min_tokens;
  p.ignore_eos = a.ignore_eos;
  p.stop = a.stop;
  p.seed = a.has_seed ? a.seed : 0;
  return p;
}

int RunOne(const Args& a, ModelRunner& model, const Tokenizer& tokenizer) {
  GenerateRequest req;
  req.prompt = tokenizer.Encode(a.prompt, !a.no_special, /*parse_special=*/false);
  req.params = Params(a);
  req.grammar = a.compiled;
  GeneratorOptions opt;
  opt.ctx_size = a.ctx;
  Generator gen(model, tokenizer, opt);
  auto result = gen.Generate(req, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!result.ok()) {
    std::fprintf(stderr, "\nforge run: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("\n");
  std::fprintf(
      stderr, "prompt: %lld tokens, %.2f tokens/s | generated: %zu tokens, %.2f tokens/s\n",
      static_cast<long long>(result->prompt_tokens),
      result->prompt_tokens / std::max(result->prefill_seconds, 1e-9), result->tokens.size(),
      result->tokens.size() / std::max(result->decode_seconds, 1e-9));
  return 0;
}

// Each line of the file is one prompt (blank lines are skipped); completions are printed as
// "[index] text" in index order once all are done. The same seed is used for every prompt.
int RunMany(const Args& a, ModelRunner& model, const Tokenizer& tokenizer) {
  std::ifstream in(a.prompts_file);
  if (!in) {
    std::fprintf(stderr, "forge run: cannot open prompts file %s\n", a.prompts_file.c_str());
    return 1;
  }
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) prompts.push_back(line);
  }
  if (prompts.empty()) {
    std::fprintf(stderr, "forge run: %s holds no prompts\n", a.prompts_file.c_str());
    return 1;
  }
  EngineOptions opt;
  opt.ctx_size = a.ctx;
  opt.max_num_seqs = a.parallel;
  opt.max_num_batched_tokens = std::max(a.batch_tokens, a.parallel);
  opt.kv_cache_bytes = KvCacheBytes(a.kv_mb, model.backend());
  opt.gpu_memory_fraction = a.gpu_memory_fraction;
  auto engine = Engine::Create(model, &tokenizer, opt);
  if (!engine.ok()) {
    std::fprintf(stderr, "forge run: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  struct Out {
    std::string text;
    FinishReason finish = FinishReason::kNone;
    Status status;
  };
  std::vector<Out> outs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EngineRequest r;
    r.prompt_ids = tokenizer.Encode(prompts[i], !a.no_special, /*parse_special=*/false);
    r.params = Params(a);
    r.grammar = a.compiled;
    if (!a.has_seed) r.params.seed.reset();  // the engine picks one per request
    r.on_event = [&outs, i](const RequestEvent& ev) {
      outs[i].text += ev.text;
      if (ev.finished) {
        outs[i].finish = ev.finish;
        outs[i].status = ev.status;
      }
    };
    auto h = (*engine)->Submit(std::move(r));
    if (!h.ok()) outs[i].status = h.status();
  }
  Status s = (*engine)->RunUntilIdle();
  if (!s.ok()) {
    std::fprintf(stderr, "forge run: %s\n", s.ToString().c_str());
    return 1;
  }
  int failed = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].status.ok()) {
      ++failed;
      std::printf("[%zu] error: %s\n", i, outs[i].status.ToString().c_str());
    } else {
      std::printf("[%zu] %s%s\n", i, prompts[i].c_str(), outs[i].text.c_str());
    }
  }
  std::fflush(stdout);
  const EngineStats st = (*engine)->stats();
  std::fprintf(
      stderr,
      "%zu prompts in %lld steps | prompt: %lld tokens | generated: %lld tokens, "
      "%.2f tokens/s | all tokens %.2f/s | prefix cache: %lld of %lld tokens | "
      "preemptions: %lld | mean TTFT %.3f s | device busy %.3f s of %.3f s in steps\n",
      prompts.size(), static_cast<long long>(st.steps), static_cast<long long>(st.prompt_tokens),
      static_cast<long long>(st.generation_tokens), st.generation_tokens_per_second(),
      st.tokens_per_second(), static_cast<long long>(st.prefix_cache_hits),
      static_cast<long long>(st.prefix_cache_queries), static_cast<long long>(st.preemptions),
      st.ttft_count ? st.ttft_seconds_sum / st.ttft_count : 0.0, st.device_busy_seconds,
      st.busy_seconds);
  return failed ? 1 : 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandRunner* runner) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Generate continuations of a prompt or of many");
  AddModelAndDevice(cmd, &a->model, &a->device);
  auto* prompt = cmd->add_option("-p,--prompt", a->prompt, "Prompt text");
  auto* file = cmd->add_option("--prompts-file", a->prompts_file,
                               "One prompt per line, run concurrently through the engine");
  prompt->excludes(file);
  file->excludes(prompt);
  cmd->add_option("-n,--max-tokens", a->n, "Tokens to generate (-1: until the context ends)");
  cmd->add_option("-c,--ctx-size", a->ctx, "Context size (0: the model's)");
  cmd->add_option("--temp", a->temp, "Temperature (0: greedy)");
  cmd->add_option("--top-k", a->top_k, "Top-k (0: off)");
  cmd->add_option("--top-p", a->top_p, "Top-p (1: off)");
  cmd->add_option("--min-p", a->min_p, "Min-p (0: off)");
  cmd->add_option("--repeat-penalty", a->repeat, "Repetition penalty (1: off)");
  cmd->add_option("--presence-penalty", a->presence, "Presence penalty");
  cmd->add_option("--frequency-penalty", a->frequency, "Frequency penalty");
  cmd->add_option("--min-tokens", a->min_tokens, "Generate at least this many tokens");
  cmd->add_option("--stop", a->stop, "Stop string (repeatable)");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at the end-of-sequence token");
  cmd->add_flag("--no-special", a->no_special, "Add no BOS to the prompt");
  cmd->add_option("--parallel", a->parallel, "With --prompts-file: most sequences at once");
  cmd->add_option("--batch-tokens", a->batch_tokens, "With --prompts-file: tokens per step");
  cmd->add_option("--kv-cache-mb", a->kv_mb,
                  "With --prompts-file: KV cache budget in MiB (0: on a GPU, planned from "
                  "--gpu-memory-fraction; on the CPU, 1024)");
  cmd->add_option("--gpu-memory-fraction", a->gpu_memory_fraction,
                  "With --prompts-file: fraction of the GPU's memory Forge may use in all "
                  "(weights, workspace, KV cache), in (0, 1]");
  cmd->add_option("--grammar", a->grammar, "Constrain the text to this GBNF grammar");
  cmd->add_option("--grammar-file", a->grammar_file, "Constrain the text to the GBNF grammar in FILE");
  cmd->add_option("--json-schema", a->json_schema, "Constrain the text to JSON of this schema");
  cmd->add_option("--json-schema-file", a->json_schema_file,
                  "Constrain the text to JSON of the schema in FILE");
  AddModelFlags(cmd, &a->model_flags);
  auto* seed = cmd->add_option("--seed", a->seed, "Random seed");
  cmd->callback([a, runner, seed] {
    a->has_seed = seed->count() > 0;
    *runner = [a]() -> int {
      if (a->prompt.empty() && a->prompts_file.empty()) {
        std::fprintf(stderr, "forge run: give -p PROMPT or --prompts-file FILE\n");
        return 2;
      }
      auto grammar = GrammarOf(*a);
      if (!grammar.ok()) {
        std::fprintf(stderr, "forge run: %s\n", grammar.status().ToString().c_str());
        return 2;
      }
      a->compiled = *grammar;
      auto loaded = LoadModelOn(a->model, a->device, a->model_flags, StderrProgressBar("loading"));
      if (!loaded.ok()) {
        std::fprintf(stderr, "forge run: %s\n", loaded.status().ToString().c_str());
        return 1;
      }
      ModelRunner* model = (*loaded)->model.get();
      auto tokenizer = Tokenizer::FromGguf(model->file());
      if (!tokenizer.ok()) {
        std::fprintf(stderr, "forge run: %s\n", tokenizer.status().ToString().c_str());
        return 1;
      }
      return a->prompts_file.empty() ? RunOne(*a, *model, **tokenizer)
                                     : RunMany(*a, *model, **tokenizer);
    };
  });
}

}  // namespace forge::cli
