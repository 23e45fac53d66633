// Presets, weight-format names and shape validation for ModelSpec. The real-model presets carry
// the published hyperparameters of each model (its config.json / GGUF conversion).
#include "modelgen/model_spec.h"

#include <array>
#include <cctype>
#include <functional>
#include <utility>

namespace forge {
namespace {

struct Preset {
  const char* name;
  std::function<void(ModelSpec&)> apply;  // changes from the ModelSpec defaults
};

const std::vector<Preset>& Presets() {
  static const std::vector<Preset> presets = {
      // Test shapes. tiny: head_dim 8, GQA 2.
      {"tiny", [](ModelSpec&) {}},
      {"tiny-mha",
       [](ModelSpec& s) { s.n_head = 4, s.n_head_kv = 4, s.n_ff = 128; }},  // head_dim 16
      {"tiny-gqa",                                                          // GQA 4, head_dim 16
       [](ModelSpec& s) { s.n_embd = 128, s.n_head = 8, s.n_head_kv = 2, s.n_ff = 256; }},
      {"tiny-mqa",  // one KV head (GQA 8), head_dim 16
       [](ModelSpec& s) { s.n_embd = 128, s.n_head = 8, s.n_head_kv = 1, s.n_ff = 256; }},
      {"tiny-k",  // rows of 256 and 512: every k-quant applies without fallback; head_dim 64
       [](ModelSpec& s) { s.n_embd = 256, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 512; }},
      {"tiny-tied", [](ModelSpec& s) { s.tied_embeddings = true; }},
      {"tiny-llama3",
       [](ModelSpec& s) {
         s.n_vocab = 1024, s.n_embd = 128, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 256;
         s.rope_theta = 500000.0f, s.vocab = VocabKind::kBpeLlama3;
       }},
      {"tiny-qwen2",
       [](ModelSpec& s) {
         s.arch = "qwen2", s.qkv_bias = true, s.n_vocab = 1024, s.n_embd = 128, s.n_head = 4;
         s.n_head_kv = 2, s.n_ff = 256, s.rope_theta = 1000000.0f, s.rms_eps = 1e-6f;
         s.vocab = VocabKind::kBpeQwen2;
       }},
      // Shapes of real models.
      {"llama-3-8b",
       [](ModelSpec& s) {
         s.name = "llama-3-8b-shaped", s.n_vocab = 128256, s.n_embd = 4096, s.n_layer = 32;
         s.n_head = 32, s.n_head_kv = 8, s.n_ff = 14336, s.n_ctx = 8192;
         s.rope_theta = 500000.0f, s.rms_eps = 1e-5f, s.vocab = VocabKind::kBpeLlama3;
       }},
      {"llama-2-7b",
       [](ModelSpec& s) {
         s.name = "llama-2-7b-shaped", s.n_vocab = 32000, s.n_embd = 4096, s.n_layer = 32;
         s.n_head = 32, s.n_head_kv = 32, s.n_ff = 11008, s.n_ctx = 4096;
         s.rope_theta = 10000.0f, s.rms_eps = 1e-5f, s.vocab = VocabKind::kSpm;
       }},
      {"llama-3.2-1b",
       [](ModelSpec& s) {
         s.name = "llama-3.2-1b-shaped", s.n_vocab = 128256, s.n_embd = 2048, s.n_layer = 16;
         s.n_head = 32, s.n_head_kv = 8, s.n_ff = 8192, s.n_ctx = 131072;
         s.rope_theta = 500000.0f, s.rms_eps = 1e-5f, s.tied_embeddings = true;
         s.vocab = VocabKind::kBpeLlama3;
       }},
      // Embedding models: bge-large-en-v1.5 (BERT-large, CLS pooling) and Qwen3-Embedding-0.6B
      // (last-token pooling; 16 heads of 128 over a width of 1024).
      {"bge-large",
       [](ModelSpec& s) {
         s.arch = "bert", s.name = "bge-large-shaped", s.n_vocab = 30522, s.n_embd = 1024;
         s.n_layer = 24, s.n_head = 16, s.n_head_kv = 16, s.n_ff = 4096, s.n_ctx = 512;
         s.rms_eps = 1e-12f, s.pooling = 2;
       }},
      {"qwen3-embedding-0.6b",
       [](ModelSpec& s) {
         s.arch = "qwen3", s.name = "qwen3-embedding-0.6b-shaped", s.n_vocab = 151669;
         s.n_embd = 1024, s.n_layer = 28, s.n_head = 16, s.n_head_kv = 8, s.head_dim = 128;
         s.n_ff = 3072, s.n_ctx = 32768, s.rope_theta = 1000000.0f, s.rms_eps = 1e-6f;
         s.tied_embeddings = true, s.pooling = 3, s.vocab = VocabKind::kBpeQwen2;
       }},
      {"qwen2.5-7b",
       [](ModelSpec& s) {
         s.arch = "qwen2", s.name = "qwen2.5-7b-shaped", s.n_vocab = 152064, s.n_embd = 3584;
         s.n_layer = 28, s.n_head = 28, s.n_head_kv = 4, s.n_ff = 18944, s.n_ctx = 32768;
         s.rope_theta = 1000000.0f, s.rms_eps = 1e-6f, s.qkv_bias = true;
         s.vocab = VocabKind::kBpeQwen2;
       }},
  };
  return presets;
}

struct MixName {
  const char* name;
  QuantMix mix;
  GgmlType base;
  int file_type;  // llama.cpp's LLAMA_FTYPE_MOSTLY_*
};

constexpr std::array<MixName, 7> kMixes = {{
    {"Q3_K_S", QuantMix::kQ3_K_S, GgmlType::kQ3_K, 11},
    {"Q3_K_M", QuantMix::kQ3_K_M, GgmlType::kQ3_K, 12},
    {"Q3_K_L", QuantMix::kQ3_K_L, GgmlType::kQ3_K, 13},
    {"Q4_K_S", QuantMix::kQ4_K_S, GgmlType::kQ4_K, 14},
    {"Q4_K_M", QuantMix::kQ4_K_M, GgmlType::kQ4_K, 15},
    {"Q5_K_S", QuantMix::kQ5_K_S, GgmlType::kQ5_K, 16},
    {"Q5_K_M", QuantMix::kQ5_K_M, GgmlType::kQ5_K, 17},
}};

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : Presets()) names.push_back(p.name);
  return names;
}

StatusOr<ModelSpec> ModelPreset(const std::string& name) {
  for (const Preset& p : Presets()) {
    if (name == p.name) {
      ModelSpec s;
      p.apply(s);
      return s;
    }
  }
  std::string known;
  for (const std::string& n : ModelPresetNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgumentError("unknown model preset '" + name + "' (known: " + known + ")");
}

Status SetWeightFormat(const std::string& name, ModelSpec* spec) {
  const std::string upper = Upper(name);
  for (const MixName& m : kMixes) {
    if (upper == m.name) {
      spec->weight_type = m.base;
      spec->mix = m.mix;
      return Status::Ok();
    }
  }
  StatusOr<GgmlType> type = ParseTypeName(name);
  if (!type.ok()) {
    return InvalidArgumentError("unknown weight format '" + name +
                                "' (expected a type: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, "
                                "Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K; or a llama.cpp mix: "
                                "Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M)");
  }
  spec->weight_type = *type;
  spec->mix = QuantMix::kPure;
  return Status::Ok();
}

std::string WeightFormatName(const ModelSpec& spec) {
  for (const MixName& m : kMixes) {
    if (spec.mix == m.mix) return m.name;
  }
  return std::string(TypeName(spec.weight_type));
}

int FileTypeOf(const ModelSpec& spec) {
  for (const MixName& m : kMixes) {
    if (spec.mix == m.mix) return m.file_type;
  }
  // Pure files: what llama-quantize --pure writes (Q3_K/Q4_K/Q5_K as their _S ftypes).
  switch (spec.weight_type) {
    case GgmlType::kF32:
      return 0;
    case GgmlType::kF16:
      return 1;
    case GgmlType::kQ4_0:
      return 2;
    case GgmlType::kQ4_1:
      return 3;
    case GgmlType::kQ8_0:
      return 7;
    case GgmlType::kQ5_0:
      return 8;
    case GgmlType::kQ5_1:
      return 9;
    case GgmlType::kQ2_K:
      return 10;
    case GgmlType::kQ3_K:
      return 11;
    case GgmlType::kQ4_K:
      return 14;
    case GgmlType::kQ5_K:
      return 16;
    case GgmlType::kQ6_K:
      return 18;
    case GgmlType::kBF16:
      return 32;
    default:
      return -1;
  }
}

int64_t HeadDim(const ModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }

Status ValidateSpec(const ModelSpec& s) {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError(
        "make-model: " + what + " (n_vocab=" + std::to_string(s.n_vocab) +
        ", n_embd=" + std::to_string(s.n_embd) + ", n_layer=" + std::to_string(s.n_layer) +
        ", n_head=" + std::to_string(s.n_head) + ", n_head_kv=" + std::to_string(s.n_head_kv) +
        ", n_ff=" + std::to_string(s.n_ff) + ")");
  };
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "gemma2" &&
      s.arch != "gemma3" && s.arch != "qwen2moe" && s.arch != "qwen3moe" && s.arch != "bert" &&
      s.arch != "nomic-bert") {
    return UnimplementedError("make-model: architecture '" + s.arch +
                              "' (expected llama, qwen2, qwen3, gemma2, gemma3, qwen2moe, "
                              "qwen3moe, bert or nomic-bert)");
  }
  const bool encoder = s.arch == "bert" || s.arch == "nomic-bert";
  if (s.pooling < 0 || s.pooling > 3 || (encoder && s.pooling == 0)) {
    return bad("pooling must be 1 (mean), 2 (cls) or 3 (last)" +
               std::string(encoder ? " for an encoder" : ", or 0 (none)"));
  }
  if (encoder && s.n_expert > 0) return bad("encoders have no experts here");
  const bool moe_arch = s.arch == "qwen2moe" || s.arch == "qwen3moe";
  if ((moe_arch && s.n_expert == 0) || s.n_expert < 0 ||
      (s.n_expert > 0 &&
       (s.n_expert_used < 1 || s.n_expert_used > s.n_expert || s.n_expert_used > 32 ||
        s.n_expert > 512 || s.n_ff_exp <= 0 || s.n_ff_shexp < 0))) {
    return bad("experts: 1 to 32 used of 1 to 512, n_ff_exp positive (" + s.arch + " needs them)");
  }
  if (s.n_embd <= 0 || s.n_layer <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 || s.n_ff <= 0 ||
      s.n_ctx <= 0) {
    return bad("every size must be positive");
  }
  if (s.head_dim == 0 && s.n_embd % s.n_head != 0) {
    return bad("n_embd must be a multiple of n_head");
  }
  if (s.head_dim < 0 || s.head_dim > 512) return bad("head_dim must be in [0, 512]");
  if (s.n_head % s.n_head_kv != 0) return bad("n_head must be a multiple of n_head_kv");
  if (HeadDim(s) % 2 != 0) return bad("head_dim must be even for RoPE");
  const int64_t min_vocab = s.vocab == VocabKind::kSpm ? 3 : 256 + 8;
  if (s.vocab_from.empty() && s.n_vocab < min_vocab) {
    return bad("n_vocab must be at least " + std::to_string(min_vocab) + " for this vocabulary");
  }
  if (s.n_vocab > (int64_t{1} << 31) || s.n_embd > (int64_t{1} << 20) ||
      s.n_ff > (int64_t{1} << 22)) {
    return bad("sizes out of range");
  }
  if (!(s.rope_theta > 0) || !(s.rms_eps > 0) || !(s.peak >= 0)) {
    return InvalidArgumentError("make-model: rope_theta and rms_eps must be positive, peak >= 0");
  }
  return Status::Ok();
}

}  // namespace forge
