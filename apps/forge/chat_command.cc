// forge chat -m MODEL.gguf: an interactive conversation through the model's chat template
// (ChatML when the file has none). Each line read from stdin is a user turn; EOF ends the chat.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "engine/generator.h"
#include "model_flags.h"
#include "progress_bar.h"
#include "runtime/backends.h"
#include "tokenizer/chat_prompt.h"
#include "tokenizer/chat_template.h"

namespace forge::cli {
namespace {

constexpr const char* kChatMl =
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

void AddChatCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string device = "auto", model, system;
    int n = 512;
    int64_t ctx = 0;
    double temp = 0.7, top_p = 0.95;
    uint64_t seed = 0;
    ModelFlags model_flags;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model through its chat template");
  AddModelAndDevice(cmd, &a->model, &a->device);
  cmd->add_option("-s,--system", a->system, "System prompt");
  cmd->add_option("-n,--max-tokens", a->n, "Most tokens per reply");
  cmd->add_option("-c,--ctx-size", a->ctx, "Context size (0: the model's)");
  cmd->add_option("--temp", a->temp, "Temperature (0: greedy)");
  cmd->add_option("--top-p", a->top_p, "Top-p");
  cmd->add_option("--seed", a->seed, "Random seed");
  AddModelFlags(cmd, &a->model_flags);
  cmd->callback([a, runner] {
    *runner = [a]() -> int {
      auto loaded = LoadModelOn(a->model, a->device, a->model_flags, StderrProgressBar("loading"));
      if (!loaded.ok()) {
        std::fprintf(stderr, "forge chat: %s\n", loaded.status().ToString().c_str());
        return 1;
      }
      std::unique_ptr<ModelRunner>* model = &(*loaded)->model;
      auto tokenizer = Tokenizer::FromGguf((*model)->file());
      if (!tokenizer.ok()) {
        std::fprintf(stderr, "forge chat: %s\n", tokenizer.status().ToString().c_str());
        return 1;
      }
      auto source_or = (*model)->file().GetStringOr("tokenizer.chat_template", "");
      if (!source_or.ok()) {
        std::fprintf(stderr, "forge chat: %s\n", source_or.status().ToString().c_str());
        return 1;
      }
      std::string source = *source_or;
      if (source.empty()) {
        std::fprintf(stderr, "forge chat: the model has no chat template; using ChatML\n");
        source = kChatMl;
      }
      auto tmpl = ChatTemplate::Parse(source);
      if (!tmpl.ok()) {
        std::fprintf(stderr, "forge chat: %s\n", tmpl.status().ToString().c_str());
        return 1;
      }
      const Vocab& vocab = (*tokenizer)->vocab();
      ChatTemplateOptions opts;
      opts.add_generation_prompt = true;
      if (vocab.Valid(vocab.bos)) opts.bos_token = (*tokenizer)->TokenToPiece(vocab.bos, true);
      if (vocab.Valid(vocab.eos)) opts.eos_token = (*tokenizer)->TokenToPiece(vocab.eos, true);
      std::vector<ChatMessage> messages;
      if (!a->system.empty()) messages.push_back({"system", a->system});
      GeneratorOptions gopt;
      gopt.ctx_size = a->ctx;
      Generator gen(**model, **tokenizer, gopt);
      std::string line;
      uint64_t turn = 0;
      while (std::fprintf(stderr, "> "), std::getline(std::cin, line)) {
        if (line.empty()) continue;
        messages.push_back({"user", line});
        // What the user types is text, never control tokens.
        auto prompt = EncodeChatPrompt(*tmpl, **tokenizer, messages, opts);
        if (!prompt.ok()) {
          std::fprintf(stderr, "forge chat: %s\n", prompt.status().ToString().c_str());
          messages.pop_back();
          continue;
        }
        GenerateRequest req;
        req.prompt = std::move(*prompt);
        req.request_id = turn++;
        req.params.temperature = a->temp;
        req.params.top_p = a->top_p;
        req.params.seed = a->seed;
        req.params.max_tokens = a->n;
        auto result = gen.Generate(req, [](std::string_view text) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;
        });
        std::printf("\n");
        if (!result.ok()) {
          std::fprintf(stderr, "forge chat: %s\n", result.status().ToString().c_str());
          messages.pop_back();
          continue;
        }
        messages.push_back({"assistant", result->text});
      }
      return 0;
    };
  });
}

}  // namespace forge::cli
