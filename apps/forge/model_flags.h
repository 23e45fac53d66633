// Flags every command that loads a model shares: --dtype (activations and KV cache) and
// --no-graphs, turned into ModelOptions.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model.h"

namespace forge::cli {

struct ModelFlags {
  std::string dtype;  // empty: the backend's default
  bool no_graphs = false;
};

inline void AddModelFlags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--dtype", f->dtype,
                  "Activation and KV cache dtype: f32|f16|bf16 (default: f32 on the CPU; "
                  "bf16 for bf16 weights, else f16 on a GPU)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_flag("--no-graphs", f->no_graphs, "Run decode steps op by op (no CUDA graphs)");
}

inline ModelOptions ToModelOptions(const ModelFlags& f) {
  ModelOptions o;
  if (!f.dtype.empty()) o.dtype = ParseDType(f.dtype).value();  // checked by the flag
  o.graphs = !f.no_graphs;
  return o;
}

}  // namespace forge::cli
