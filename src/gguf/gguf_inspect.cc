// DescribeGguf and ReadTensorValues.
#include "gguf/gguf_inspect.h"

#include <cinttypes>
#include <cstdio>
#include <map>

#include "quant/dequantize.h"

namespace forge {
namespace {

std::string HumanBytes(int64_t b) {
  char buf[32];
  if (b >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / 1073741824.0);
  else if (b >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", b / 1048576.0);
  else if (b >= 1024)
    std::snprintf(buf, sizeof(buf), "%.2f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%" PRId64 " B", b);
  return buf;
}

void Line(std::string& out, const char* label, const std::string& value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "  %-22s", label);
  out += buf;
  out += value;
  out += '\n';
}

// A string key's value; "" when absent or not a string (a file may hold anything).
std::string StringOrEmpty(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  return v != nullptr && v->type() == GgufType::kString ? v->str() : "";
}

}  // namespace

std::string DescribeGguf(const GgufFile& f, const InspectOptions& options) {
  std::string out;
  out += "file: " + f.path() + "\n";
  Line(out, "gguf version", std::to_string(f.version()));
  if (f.shard_count() > 1) Line(out, "split files", std::to_string(f.shard_count()));
  std::string arch = StringOrEmpty(f, "general.architecture");
  if (const GgufValue* v = f.Find("general.architecture"); v != nullptr && arch.empty()) {
    Line(out, "architecture", "(not a string: " + v->ToString() + ")");
  } else {
    Line(out, "architecture", arch.empty() ? "(none)" : arch);
  }
  if (const GgufValue* name = f.Find("general.name")) Line(out, "name", name->ToString());
  if (!arch.empty()) {
    static const char* kKeys[][2] = {
        {"context_length", "context length"},
        {"embedding_length", "embedding length"},
        {"block_count", "layers"},
        {"feed_forward_length", "ffn length"},
        {"attention.head_count", "heads"},
        {"attention.head_count_kv", "kv heads"},
        {"attention.key_length", "head dim (k)"},
        {"attention.value_length", "head dim (v)"},
        {"rope.dimension_count", "rope dims"},
        {"rope.freq_base", "rope freq base"},
        {"rope.scaling.type", "rope scaling"},
        {"attention.layer_norm_rms_epsilon", "rms norm eps"},
        {"expert_count", "experts"},
    };
    for (auto& k : kKeys) {
      if (const GgufValue* v = f.Find(arch + "." + k[0])) Line(out, k[1], v->ToString());
    }
  }
  std::string tok_model = StringOrEmpty(f, "tokenizer.ggml.model");
  if (!tok_model.empty()) {
    std::string kind = tok_model;
    if (tok_model == "llama")
      kind += " (SentencePiece)";
    else if (tok_model == "gpt2")
      kind += " (byte-level BPE)";
    else if (tok_model == "bert")
      kind += " (WordPiece)";
    if (const GgufValue* pre = f.Find("tokenizer.ggml.pre")) kind += ", pre " + pre->ToString();
    Line(out, "tokenizer", kind);
  }
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens")) {
    Line(out, "vocab size", std::to_string(tokens->items().size()));
  }
  Line(out, "chat template", f.Has("tokenizer.chat_template") ? "yes" : "no");

  if (options.show_metadata) {
    out += "metadata (" + std::to_string(f.metadata().size()) + " keys):\n";
    for (const auto& [key, value] : f.metadata()) {
      out += "  " + key + " = " + value.ToString() + "\n";
    }
  }

  std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // name -> (count, bytes)
  int64_t params = 0;
  for (const auto& t : f.tensors()) {
    auto& e = by_type[std::string(TypeName(t.type))];
    e.first += 1;
    e.second += t.n_bytes;
    params += t.n_elements;
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "tensors: %zu, %s parameters, %s of data\n", f.tensors().size(),
                std::to_string(params).c_str(), HumanBytes(f.TotalTensorBytes()).c_str());
  out += buf;
  for (const auto& [type, e] : by_type) {
    std::snprintf(buf, sizeof(buf), "  %-8s %6" PRId64 " tensors  %s\n", type.c_str(), e.first,
                  HumanBytes(e.second).c_str());
    out += buf;
  }
  if (options.show_tensors && !f.tensors().empty()) {
    out += "tensor table:\n";
    for (const auto& t : f.tensors()) {
      std::snprintf(buf, sizeof(buf), "  %-32s %-6s %-22s %s\n", t.name.c_str(),
                    std::string(TypeName(t.type)).c_str(), t.ShapeString().c_str(),
                    HumanBytes(t.n_bytes).c_str());
      out += buf;
    }
  }
  return out;
}

StatusOr<std::vector<float>> ReadTensorValues(const GgufFile& file, const std::string& name,
                                              int64_t n) {
  const GgufTensorInfo* t = file.FindTensor(name);
  if (t == nullptr) return NotFoundError("no tensor named '" + name + "'");
  if (n < 0) return InvalidArgumentError("negative value count");
  if (n > t->n_elements) n = t->n_elements;
  if (n == 0) return std::vector<float>{};  // (an empty vector's data() may be null)
  const TypeTraits& traits = GetTypeTraits(t->type);
  int64_t blocks = (n + traits.block_elems - 1) / traits.block_elems;
  std::vector<float> values(blocks * traits.block_elems);
  RETURN_IF_ERROR(
      DequantizeRow(t->type, t->data, values.data(), static_cast<int64_t>(values.size())));
  values.resize(n);
  return values;
}

}  // namespace forge
