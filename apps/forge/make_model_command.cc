// forge make-model OUT.gguf [--preset NAME] [--type FORMAT] [shape flags]: a synthetic
// llama-family model (modelgen/model_maker.h), or with --dry-run its tensor plan.
#include <cstdio>
#include <map>

#include "commands.h"
#include "modelgen/model_maker.h"

namespace forge::cli {
namespace {

// "8.03 B parameters, 4.58 GiB" / "246.6 K parameters, 258.1 KiB".
std::string SizeString(int64_t params, int64_t bytes) {
  char buf[96];
  const double p = static_cast<double>(params), b = static_cast<double>(bytes);
  const char* pu = p >= 1e9 ? "B" : p >= 1e6 ? "M" : "K";
  const double ps = p >= 1e9 ? p / 1e9 : p >= 1e6 ? p / 1e6 : p / 1e3;
  const char* bu = b >= 1073741824.0 ? "GiB" : b >= 1048576.0 ? "MiB" : "KiB";
  const double bs = b >= 1073741824.0 ? b / 1073741824.0
                    : b >= 1048576.0  ? b / 1048576.0
                                      : b / 1024;
  std::snprintf(buf, sizeof(buf), "%.2f %s parameters, %.2f %s", ps, pu, bs, bu);
  return buf;
}

void PrintPlan(const ModelSpec& spec, const ModelPlan& plan) {
  std::map<std::string, int> by_type;
  for (const TensorPlan& t : plan.tensors) {
    std::string dims;
    for (int64_t d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    std::printf("%-28s %-6s [%s]%s\n", t.name.c_str(), std::string(TypeName(t.type)).c_str(),
                dims.c_str(), t.fallback ? "  (fallback)" : "");
    ++by_type[std::string(TypeName(t.type))];
  }
  std::printf("%s %s: %zu tensors, %s;", spec.arch.c_str(), WeightFormatName(spec).c_str(),
              plan.tensors.size(), SizeString(plan.n_params, plan.n_bytes).c_str());
  for (const auto& [type, n] : by_type) std::printf(" %s x%d", type.c_str(), n);
  std::printf("\n");
}

}  // namespace

void AddMakeModelCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string out, preset = "tiny", type, vocab, vocab_from, arch, name, pooling;
    ModelSpec spec;
    ModelSpec o;  // shape overrides, applied when their flag is given
    float peak = -1;
    bool peaked = false, qkv_bias = false, no_qkv_bias = false, tied = false, untied = false;
    bool dry_run = false;
  };
  auto args = std::make_shared<Args>();
  ModelSpec& s = args->spec;
  CLI::App* cmd = app.add_subcommand("make-model", "Write a synthetic llama-family GGUF model");
  cmd->add_option("output", args->out, "Output .gguf path");
  std::string presets;
  for (const std::string& n : ModelPresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  cmd->add_option("--preset", args->preset, "Shape preset: " + presets);
  cmd->add_option("--type", args->type,
                  "Weight format: a type (f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k "
                  "q5_k q6_k q8_k) or a llama.cpp mix (q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s "
                  "q5_k_m)");
  cmd->add_option("--seed", s.seed, "Random seed (the weights depend on it only)");
  cmd->add_option("--threads", s.threads, "Threads (default: all)");
  // Shape overrides: applied on top of the preset when given.
  auto* o_arch = cmd->add_option("--arch", args->arch,
                                 "llama, qwen2, qwen3, gemma2, gemma3, qwen2moe, qwen3moe, bert "
                                 "or nomic-bert");
  auto* o_name = cmd->add_option("--name", args->name, "general.name");
  ModelSpec& ov = args->o;
  auto* o_vocab = cmd->add_option("--n-vocab", ov.n_vocab, "Vocabulary size");
  auto* o_embd = cmd->add_option("--n-embd", ov.n_embd, "Embedding width");
  auto* o_layer = cmd->add_option("--n-layer", ov.n_layer, "Blocks");
  auto* o_head = cmd->add_option("--n-head", ov.n_head, "Query heads");
  auto* o_kv = cmd->add_option("--n-head-kv", ov.n_head_kv, "KV heads (GQA ratio = heads / this)");
  auto* o_ff = cmd->add_option("--n-ff", ov.n_ff, "FFN width");
  auto* o_head_dim =
      cmd->add_option("--head-dim", ov.head_dim, "Head dim (default: n_embd / n_head)");
  auto* o_ctx = cmd->add_option("--n-ctx", ov.n_ctx, "Context length");
  auto* o_theta = cmd->add_option("--rope-theta", ov.rope_theta, "RoPE base frequency");
  auto* o_eps = cmd->add_option("--rms-eps", ov.rms_eps, "RMSNorm epsilon");
  auto* o_window = cmd->add_option("--sliding-window", ov.sliding_window,
                                   "Gemma: attention.sliding_window (keys)");
  auto* o_attn_cap =
      cmd->add_option("--attn-softcap", ov.attn_softcap, "Gemma: attn_logit_softcapping");
  auto* o_final_cap =
      cmd->add_option("--final-softcap", ov.final_softcap, "Gemma: final_logit_softcapping");
  auto* o_experts =
      cmd->add_option("--experts", ov.n_expert, "Mixture of experts: experts a layer");
  auto* o_used = cmd->add_option("--experts-used", ov.n_expert_used, "Experts a token");
  auto* o_ff_exp = cmd->add_option("--n-ff-exp", ov.n_ff_exp, "Each expert's FFN width");
  auto* o_ff_shexp =
      cmd->add_option("--n-ff-shexp", ov.n_ff_shexp, "The shared expert's FFN width (qwen2moe)");
  cmd->add_option("--pooling", args->pooling,
                  "An embedding model: pooling_type none, mean, cls or last (encoders: mean)");
  cmd->add_flag("--qkv-bias", args->qkv_bias, "Add attn_{q,k,v}.bias");
  cmd->add_flag("--no-qkv-bias", args->no_qkv_bias, "No QKV biases");
  cmd->add_flag("--tied", args->tied, "Tied embeddings (no output.weight)");
  cmd->add_flag("--untied", args->untied, "Separate output.weight");
  cmd->add_flag("--peaked", args->peaked, "Peaked output distributions (peak 20)");
  cmd->add_option("--peak", args->peak, "Peaked outputs with this target logit (0: off)");
  cmd->add_option("--vocab", args->vocab,
                  "Synthetic vocabulary: spm, llama3, qwen2 or words (English words; with "
                  "--peaked the greedy text is words)");
  cmd->add_option("--vocab-from", args->vocab_from,
                  "Copy the tokenizer of this file: a GGUF, or a Hugging Face tokenizer.json "
                  "(with its tokenizer_config.json beside it)");
  cmd->add_flag("--dry-run", args->dry_run, "Print the tensor plan; write nothing");
  cmd->callback([=] {
    *runner = [=]() -> int {
      auto fail = [](const Status& st, int code) {
        std::fprintf(stderr, "forge make-model: %s\n", st.ToString().c_str());
        return code;
      };
      auto preset = ModelPreset(args->preset);
      if (!preset.ok()) return fail(preset.status(), 2);
      ModelSpec spec = *preset;
      const ModelSpec& a = args->spec;
      spec.seed = a.seed;
      spec.threads = a.threads;
      if (o_arch->count()) {
        spec.arch = args->arch;
        spec.qkv_bias = spec.arch == "qwen2" || spec.arch == "qwen2moe";
        if (spec.arch == "bert" || spec.arch == "nomic-bert") spec.pooling = 1;
      }
      if (!args->pooling.empty()) {
        const char* names[] = {"none", "mean", "cls", "last"};
        int pooling = -1;
        for (int i = 0; i < 4; ++i) pooling = args->pooling == names[i] ? i : pooling;
        if (pooling < 0) {
          return fail(InvalidArgumentError("--pooling '" + args->pooling +
                                           "' (expected none, mean, cls or last)"),
                      2);
        }
        spec.pooling = pooling;
      }
      if (o_name->count()) spec.name = args->name;
      const ModelSpec& o = args->o;
      if (o_vocab->count()) spec.n_vocab = o.n_vocab;
      if (o_embd->count()) spec.n_embd = o.n_embd;
      if (o_layer->count()) spec.n_layer = o.n_layer;
      if (o_head->count()) spec.n_head = o.n_head;
      if (o_kv->count()) spec.n_head_kv = o.n_head_kv;
      if (o_ff->count()) spec.n_ff = o.n_ff;
      if (o_head_dim->count()) spec.head_dim = o.head_dim;
      if (o_ctx->count()) spec.n_ctx = o.n_ctx;
      if (o_theta->count()) spec.rope_theta = o.rope_theta;
      if (o_eps->count()) spec.rms_eps = o.rms_eps;
      if (o_window->count()) spec.sliding_window = o.sliding_window;
      if (o_attn_cap->count()) spec.attn_softcap = o.attn_softcap;
      if (o_final_cap->count()) spec.final_softcap = o.final_softcap;
      if (o_experts->count()) spec.n_expert = o.n_expert;
      if (o_used->count()) spec.n_expert_used = o.n_expert_used;
      if (o_ff_exp->count()) spec.n_ff_exp = o.n_ff_exp;
      if (o_ff_shexp->count()) spec.n_ff_shexp = o.n_ff_shexp;
      if (args->qkv_bias) spec.qkv_bias = true;
      if (args->no_qkv_bias) spec.qkv_bias = false;
      if (args->tied) spec.tied_embeddings = true;
      if (args->untied) spec.tied_embeddings = false;
      if (args->peaked) spec.peak = 20.0f;
      if (args->peak >= 0) spec.peak = args->peak;
      if (!args->vocab.empty()) {
        if (args->vocab == "spm")
          spec.vocab = VocabKind::kSpm;
        else if (args->vocab == "llama3")
          spec.vocab = VocabKind::kBpeLlama3;
        else if (args->vocab == "qwen2")
          spec.vocab = VocabKind::kBpeQwen2;
        else if (args->vocab == "words")
          spec.vocab = VocabKind::kWords;
        else
          return fail(InvalidArgumentError("--vocab '" + args->vocab +
                                           "' (expected spm, llama3, qwen2 or words)"),
                      2);
        if (spec.vocab == VocabKind::kWords && o_vocab->count()) {
          return fail(InvalidArgumentError("--n-vocab: the words vocabulary has a fixed size"), 2);
        }
      }
      spec.vocab_from = args->vocab_from;
      if (!args->type.empty()) {
        Status st = SetWeightFormat(args->type, &spec);
        if (!st.ok()) return fail(st, 2);
      }
      if (args->dry_run) {
        Status st = ResolveVocab(&spec);
        if (!st.ok()) return fail(st, 1);
        auto plan = PlanModel(spec);
        if (!plan.ok()) return fail(plan.status(), 2);
        PrintPlan(spec, *plan);
        return 0;
      }
      if (args->out.empty()) return fail(InvalidArgumentError("no output path given"), 2);
      auto stats = MakeModel(spec, args->out);
      if (!stats.ok()) {
        return fail(stats.status(), stats.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
      }
      std::string fallback;
      if (stats->n_fallback > 0) {
        fallback = " (" + std::to_string(stats->n_fallback) + " tensors in a fallback type)";
      }
      std::printf("wrote %s: %s %s, %d tensors, %s in %.2f s on %d threads%s\n", args->out.c_str(),
                  spec.arch.c_str(), WeightFormatName(spec).c_str(), stats->n_tensors,
                  SizeString(stats->n_params, stats->n_bytes).c_str(), stats->seconds,
                  stats->threads, fallback.c_str());
      return 0;
    };
  });
}

}  // namespace forge::cli
