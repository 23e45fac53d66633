// Flags every command that loads a model shares: --dtype (activations and KV cache),
// --no-graphs, --tensor-parallel, --gpu-memory-limit and --threads, turned into the backends and
// the loaded model; and --kv-cache-mb's meaning for the engine.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "base/thread_pool.h"
#include "runtime/backends.h"
#include "runtime/model_runner.h"

namespace forge::cli {

struct ModelFlags {
  std::string dtype;  // empty: the backend's default
  bool no_graphs = false;
  int tensor_parallel = 1;
  std::string gpu_memory_limit;  // empty: none
  int threads = 0;               // compute threads of the host (0: the physical cores available)
};

// -m,--model (required) and --device, as every command that runs a model names them.
inline void AddModelAndDevice(CLI::App* cmd, std::string* model, std::string* device) {
  cmd->add_option("-m,--model", *model, "GGUF model")->required();
  cmd->add_option("--device", *device, "auto|cpu|cuda");
}

inline void AddModelFlags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--dtype", f->dtype,
                  "Activation and KV cache dtype: f32|f16|bf16 (default: f32 on the CPU; "
                  "bf16 for bf16 weights, else f16 on a GPU)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_flag("--no-graphs", f->no_graphs, "Run decode steps op by op (no CUDA graphs)");
  cmd->add_option("--tensor-parallel,--tp", f->tensor_parallel,
                  "Split the model over this many GPUs (0 .. N-1; one thread each, NCCL between "
                  "them): heads, FFN features and vocabulary divided, the KV cache likewise")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--gpu-memory-limit", f->gpu_memory_limit,
                  "Memory each GPU may hand Forge (weights, workspace, KV cache), e.g. 24GiB; "
                  "default: the whole device");
  cmd->add_option("-t,--threads", f->threads,
                  "Compute threads on the host (CPU backend ops; default: the physical cores "
                  "this process may run on)")
      ->check(CLI::PositiveNumber);
}

// Whether the backend is a device with its own memory (a GPU: MemoryInfo reports a total), not
// the host's.
inline bool HasDeviceMemory(Backend& backend) {
  int64_t free_bytes = 0, total_bytes = 0;
  backend.MemoryInfo(&free_bytes, &total_bytes);
  return total_bytes > 0;
}

// --kv-cache-mb as EngineOptions::kv_cache_bytes: 0 stays 0 on a backend that reports its
// memory (the pool is then planned from --gpu-memory-fraction) and is 1024 MiB in host memory.
inline int64_t KvCacheBytes(int64_t kv_mb, Backend& backend) {
  if (kv_mb == 0 && !HasDeviceMemory(backend)) return int64_t{1024} << 20;
  return kv_mb << 20;
}

inline RunnerOptions ToRunnerOptions(const ModelFlags& f) {
  RunnerOptions o;
  if (!f.dtype.empty()) o.dtype = ParseDType(f.dtype).value();  // checked by the flag
  o.graphs = !f.no_graphs;
  return o;
}

// The backends and the model on them (members destroyed in reverse: the model first).
struct LoadedModel {
  BackendSet backends;
  std::unique_ptr<ModelRunner> model;
  Backend& backend() const { return backends.first(); }
};

inline StatusOr<std::unique_ptr<LoadedModel>> LoadModelOn(const std::string& path,
                                                          const std::string& device,
                                                          const ModelFlags& f,
                                                          const LoadProgress& progress = {}) {
  int64_t limit = 0;
  if (!f.gpu_memory_limit.empty()) {
    ASSIGN_OR_RETURN(limit, ParseByteSize(f.gpu_memory_limit));
  }
  if (f.threads > 0) ThreadPool::SetGlobalThreads(f.threads);
  auto l = std::make_unique<LoadedModel>();
  ASSIGN_OR_RETURN(l->backends, CreateBackends(device, f.tensor_parallel, limit));
  ASSIGN_OR_RETURN(
      l->model, ModelRunner::LoadParallel(path, l->backends.ranks(), l->backends.collective.get(),
                                          progress, ToRunnerOptions(f)));
  return l;
}

}  // namespace forge::cli
