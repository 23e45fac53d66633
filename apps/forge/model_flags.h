// Flags every command that loads a model shares: --dtype (activations and KV cache) and
// --no-graphs, turned into ModelOptions; and --kv-cache-mb's meaning for the engine.
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

// --kv-cache-mb as EngineOptions::kv_cache_bytes: 0 stays 0 on a backend that reports its
// memory (the pool is then planned from --gpu-memory-fraction) and is 1024 MiB in host memory.
inline int64_t KvCacheBytes(int64_t kv_mb, Backend& backend) {
  int64_t free_bytes = 0, total_bytes = 0;
  backend.MemoryInfo(&free_bytes, &total_bytes);
  if (kv_mb == 0 && total_bytes == 0) return int64_t{1024} << 20;
  return kv_mb << 20;
}

inline ModelOptions ToModelOptions(const ModelFlags& f) {
  ModelOptions o;
  if (!f.dtype.empty()) o.dtype = ParseDType(f.dtype).value();  // checked by the flag
  o.graphs = !f.no_graphs;
  return o;
}

}  // namespace forge::cli
