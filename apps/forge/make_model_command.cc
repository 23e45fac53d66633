// forge make-model OUT.gguf [--preset NAME] [shape flags]: a synthetic llama-family model.
#include <cstdio>

#include "commands.h"
#include "modelgen/model_maker.h"

namespace forge::cli {

void AddMakeModelCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string out, preset = "tiny", type = "f32";
    ModelSpec spec;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("make-model", "Write a synthetic llama-family GGUF model");
  cmd->add_option("output", args->out, "Output .gguf path")->required();
  cmd->add_option("--preset", args->preset, "Shape preset (tiny)");
  cmd->add_option("--type", args->type, "Weight format of the matrices (f32)");
  cmd->add_option("--seed", args->spec.seed, "Random seed");
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      auto spec = ModelPreset(args->preset);
      if (!spec.ok()) {
        std::fprintf(stderr, "forge make-model: %s\n", spec.status().ToString().c_str());
        return 2;
      }
      auto type = ParseTypeName(args->type);
      if (!type.ok()) {
        std::fprintf(stderr, "forge make-model: %s\n", type.status().ToString().c_str());
        return 2;
      }
      spec->weight_type = *type;
      spec->seed = args->spec.seed;
      Status st = MakeModel(*spec, args->out);
      if (!st.ok()) {
        std::fprintf(stderr, "forge make-model: %s\n", st.ToString().c_str());
        return 1;
      }
      std::printf("wrote %s\n", args->out.c_str());
      return 0;
    };
  });
}

}  // namespace forge::cli
