// forge inspect FILE.gguf [--tensor NAME --values N] [--metadata]
#include <cstdio>

#include "commands.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_inspect.h"

namespace forge::cli {

void AddInspectCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string path, tensor;
    int64_t values = 16;
    bool metadata = false, no_tensors = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("inspect", "Describe a GGUF file");
  cmd->add_option("file", args->path, "GGUF file")->required();
  cmd->add_option("--tensor", args->tensor, "Print values of this tensor");
  cmd->add_option("--values", args->values, "How many values of --tensor to print");
  cmd->add_flag("--metadata", args->metadata, "Print every metadata key");
  cmd->add_flag("--no-tensors", args->no_tensors, "Omit the tensor table");
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      auto file = GgufFile::Open(args->path);
      if (!file.ok()) {
        std::fprintf(stderr, "forge inspect: %s\n", file.status().ToString().c_str());
        return 1;
      }
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
