// forge logits -m MODEL.gguf --ids 1,2,3 [--out FILE]: teacher-forced logits of every position,
// written as raw little-endian float32 [n_tokens, n_vocab] (for comparisons with other engines).
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "model_flags.h"
#include "runtime/backends.h"
#include "runtime/teacher_forced.h"

namespace forge::cli {

void AddLogitsCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string device = "auto", model, ids, out;
    int chunk = 0;
    ModelFlags model_flags;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("logits", "Teacher-forced logits of a token sequence");
  AddModelAndDevice(cmd, &args->model, &args->device);
  cmd->add_option("--ids", args->ids, "Token ids, comma or space separated")->required();
  cmd->add_option("--out", args->out, "Write float32 logits here");
  cmd->add_option("--chunk", args->chunk, "Prefill chunk size (0: one batch)");
  AddModelFlags(cmd, &args->model_flags);
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      std::vector<int32_t> ids;
      std::string s = args->ids;
      for (char& c : s) c = (c == ',') ? ' ' : c;
      std::istringstream in(s);
      long long v;
      while (in >> v) ids.push_back(static_cast<int32_t>(v));
      if (!in.eof() || ids.empty()) {
        std::fprintf(stderr, "forge logits: --ids must be a list of integers\n");
        return 2;
      }
      auto loaded = LoadModelOn(args->model, args->device, args->model_flags, {});
      if (!loaded.ok()) {
        std::fprintf(stderr, "forge logits: %s\n", loaded.status().ToString().c_str());
        return 1;
      }
      std::unique_ptr<ModelRunner>* model = &(*loaded)->model;
      auto logits = TeacherForcedLogits(**model, ids, args->chunk);
      if (!logits.ok()) {
        std::fprintf(stderr, "forge logits: %s\n", logits.status().ToString().c_str());
        return 1;
      }
      const int64_t vocab = (*model)->config().n_vocab;
      if (!args->out.empty()) {
        std::FILE* f = std::fopen(args->out.c_str(), "wb");
        if (f == nullptr || std::fwrite(logits->data(), 4, logits->size(), f) != logits->size() ||
            std::fclose(f) != 0) {
          std::fprintf(stderr, "forge logits: cannot write %s\n", args->out.c_str());
          return 1;
        }
      }
      std::printf("%zu tokens x %lld logits\n", ids.size(), static_cast<long long>(vocab));
      return 0;
    };
  });
}

}  // namespace forge::cli
