// forge tokenize -m FILE.gguf [--file PATH | TEXT] [--ids] [--no-special] [--parse-special]
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/escapes.h"
#include "base/utf8.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace forge::cli {
namespace {

// A piece for display: valid UTF-8 as is, control characters and stray bytes as escapes.
std::string Printable(const std::string& piece) {
  std::string out;
  size_t pos = 0;
  while (pos < piece.size()) {
    const size_t start = pos;
    const uint32_t cp = utf8::DecodeAt(piece, &pos);
    const bool invalid =
        cp == utf8::kReplacement && piece.compare(start, pos - start, utf8::kReplacementUtf8) != 0;
    if (invalid) {
      for (size_t i = start; i < pos; ++i) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<uint8_t>(piece[i]));
        out += buf;
      }
    } else if (!AppendControlEscape(cp, &out)) {
      out.append(piece, start, pos - start);
    }
  }
  return out;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    std::string model, file, text;
    bool ids = false, no_special = false, parse_special = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Turn text into token ids with a GGUF's vocab");
  cmd->add_option("-m,--model", args->model, "GGUF file with the vocab")->required();
  CLI::Option* file = cmd->add_option("--file", args->file, "Read the text from this file");
  CLI::Option* text = cmd->add_option("text", args->text, "The text (quote it)")->excludes(file);
  cmd->add_flag("--ids", args->ids, "Print only the ids, space separated, on one line");
  cmd->add_flag("--no-special", args->no_special, "Add no BOS/EOS tokens");
  cmd->add_flag("--parse-special", args->parse_special,
                "Turn the text of control tokens (<|im_end|>...) into those tokens");
  cmd->callback([args, runner, text] {
    const bool have_text = text->count() > 0;
    *runner = [args, have_text]() -> int {
      if (!have_text && args->file.empty()) {
        std::fprintf(stderr, "forge tokenize: give the TEXT or --file PATH\n");
        return 2;
      }
      std::string text = args->text;
      if (!args->file.empty()) {
        std::ifstream in(args->file, std::ios::binary);
        if (!in) {
          std::fprintf(stderr, "forge tokenize: cannot read %s\n", args->file.c_str());
          return 1;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
      }
      auto gguf = GgufFile::Open(args->model);
      if (!gguf.ok()) {
        std::fprintf(stderr, "forge tokenize: %s\n", gguf.status().ToString().c_str());
        return 1;
      }
      auto tok = Tokenizer::FromGguf(**gguf);
      if (!tok.ok()) {
        std::fprintf(stderr, "forge tokenize: %s\n", tok.status().ToString().c_str());
        return 1;
      }
      const std::vector<TokenId> ids = (*tok)->Encode(text, !args->no_special, args->parse_special);
      if (args->ids) {
        for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
        std::printf("\n");
        return 0;
      }
      for (TokenId id : ids) {
        std::printf("%6d -> '%s'\n", id, Printable((*tok)->TokenToPiece(id, true)).c_str());
      }
      return 0;
    };
  });
}

}  // namespace forge::cli
