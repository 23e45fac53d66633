// forge inspect FILE.gguf [--tensor NAME --values N] [--metadata] [--plan]
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "commands.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_inspect.h"
#include "quant/type_table.h"
#if FORGE_HAVE_CUDA
#include "backend/cuda/matmul/matmul_dispatch.h"
#endif

namespace forge::cli {
namespace {

// The CUDA matmul variant each weight of the file takes at each row bucket, and why (the
// dispatch's own rules, matmul_dispatch.h; no GPU needed). Weights of one type and row length
// take the same variants (no rule reads the row count), so they are listed together.
int PrintMatmulPlan(const GgufFile& file) {
#if FORGE_HAVE_CUDA
  const bool has_output = file.FindTensor("output.weight") != nullptr;
  auto is_matmul = [&](const GgufTensorInfo& t) {
    const std::string& n = t.name;
    if (t.dims.size() != 2 || !n.ends_with(".weight") || n.find("norm") != std::string::npos) {
      return false;
    }
    return n != "token_embd.weight" || !has_output;  // tied embeddings are the LM head
  };
  // Weights not in a block format run in the activation type: BF16 for a model stored mostly in
  // BF16, else F16 (the CUDA backend's default).
  std::map<GgmlType, int64_t> bytes;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (is_matmul(t)) bytes[t.type] += t.n_bytes;
  }
  GgmlType most = GgmlType::kF16;
  for (const auto& [t, b] : bytes) {
    if (b > bytes[most]) most = t;
  }
  const DType act = most == GgmlType::kBF16 ? DType::kBF16 : DType::kF16;
  struct Group {
    int count = 0;
    std::string example;
  };
  std::map<std::tuple<GgmlType, int64_t>, Group> groups;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (!is_matmul(t)) continue;
    const GgmlType type = cuda::DeviceWeightType(t.type, act);
    Group& g = groups[{type, t.dims[0]}];
    if (g.count++ == 0) g.example = t.name;
  }
  const int64_t buckets[][2] = {{1, 1},   {2, 8},   {9, 16},  {17, 32},
                                {33, 64}, {65, 256}, {257, 0}};
  std::printf("CUDA matmul plan: %s activations, F32 out; columns are rows per step\n",
              DTypeName(act));
  std::printf("%-6s %7s %6s  %-28s", "type", "k", "count", "example");
  for (const auto& b : buckets) {
    const std::string h = b[1] == 0   ? std::to_string(b[0]) + "+"
                          : b[0] == b[1] ? std::to_string(b[0])
                                         : std::to_string(b[0]) + "-" + std::to_string(b[1]);
    std::printf(" %-17s", h.c_str());
  }
  std::printf("\n");
  std::string why;
  for (const auto& [key, g] : groups) {
    const auto& [type, k] = key;
    std::printf("%-6s %7lld %6d  %-28s", std::string(TypeName(type)).c_str(),
                static_cast<long long>(k), g.count, g.example.c_str());
    for (const auto& b : buckets) {
      auto rb = RowBytes(type, k);
      const WeightView w{type, 4096, k, rb.ok() ? *rb : 0, nullptr};
      const cuda::MatmulChoice c = cuda::ChooseMatmulForShape(w, b[0], act, DType::kF32, true);
      std::printf(" %-17s", c.variant != nullptr ? c.variant->name : "none");
      why += std::string(TypeName(type)) + " k=" + std::to_string(k) + " m=" +
             std::to_string(b[0]) + ": " + c.Explain() + "\n";
    }
    std::printf("\n");
  }
  std::printf("\nwhy (the first row of each column):\n%s", why.c_str());
  return 0;
#else
  (void)file;
  std::fprintf(stderr, "forge inspect: --plan lists the CUDA backend's choices; this build has no "
                       "CUDA backend\n");
  return 1;
#endif
}

}  // namespace

void AddInspectCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string path, tensor;
    int64_t values = 16;
    bool metadata = false, no_tensors = false, plan = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("inspect", "Describe a GGUF file");
  cmd->add_option("file", args->path, "GGUF file")->required();
  cmd->add_option("--tensor", args->tensor, "Print values of this tensor");
  cmd->add_option("--values", args->values, "How many values of --tensor to print");
  cmd->add_flag("--metadata", args->metadata, "Print every metadata key");
  cmd->add_flag("--no-tensors", args->no_tensors, "Omit the tensor table");
  cmd->add_flag("--plan", args->plan,
                "Print the CUDA matmul variant each weight takes at each batch size, and why");
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      auto file = GgufFile::Open(args->path);
      if (!file.ok()) {
        std::fprintf(stderr, "forge inspect: %s\n", file.status().ToString().c_str());
        return 1;
      }
      if (args->plan) return PrintMatmulPlan(**file);
      if (!args->tensor.empty()) {
        auto values = ReadTensorValues(**file, args->tensor, args->values);
        if (!values.ok()) {
          std::fprintf(stderr, "forge inspect: %s\n", values.status().ToString().c_str());
          return 1;
        }
        const GgufTensorInfo* t = (*file)->FindTensor(args->tensor);
        std::printf("%s %s %s\n", t->name.c_str(), std::string(TypeName(t->type)).c_str(),
                    t->ShapeString().c_str());
        for (size_t i = 0; i < values->size(); ++i) {
          std::printf("%.9g%c", (*values)[i], (i + 1) % 8 == 0 ? '\n' : ' ');
        }
        if (values->size() % 8 != 0) std::printf("\n");
        return 0;
      }
      InspectOptions opts;
      opts.show_metadata = args->metadata;
      opts.show_tensors = !args->no_tensors;
      std::fputs(DescribeGguf(**file, opts).c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace forge::cli
