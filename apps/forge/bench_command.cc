// forge bench --floor: the machine's floors (DESIGN.md), printed beside the card's known figures.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/cpu/memory_floor.h"
#include "commands.h"
#include "progress_bar.h"
#include "runtime/backends.h"
#include "model/model_bench.h"
#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/device.h"
#include "backend/cuda/floor/gpu_floor.h"
#endif

namespace forge::cli {
namespace {

int RunFloor(const std::string& device, const std::string& json_path) {
  nlohmann::json j;
  bool use_gpu = false;
#ifdef FORGE_HAVE_CUDA
  use_gpu = device == "cuda" || (device == "auto" && cuda::DeviceCount() > 0);
  if (device == "cuda" && cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "forge bench: --device cuda: %s\n", cuda::NoDeviceReason().c_str());
    return 1;
  }
#else
  if (device == "cuda") {
    std::fprintf(stderr, "forge bench: this build has no CUDA backend\n");
    return 1;
  }
#endif
  if (!use_gpu) {
    CpuCopyBandwidth bw = MeasureCpuCopyBandwidth();
    std::printf("device: cpu (%d threads)\n", bw.threads);
    std::printf("memory copy bandwidth: %.2f GB/s (read + written, %lld MiB buffers)\n",
                bw.bytes_per_second / 1e9, static_cast<long long>(bw.buffer_bytes >> 20));
    j = {{"device", "cpu"}, {"threads", bw.threads}, {"copy_bytes_per_s", bw.bytes_per_second}};
  }
#ifdef FORGE_HAVE_CUDA
  if (use_gpu) {
    auto floor = cuda::MeasureGpuFloor();
    if (!floor.ok()) {
      std::fprintf(stderr, "forge bench: %s\n", floor.status().ToString().c_str());
      return 1;
    }
    const cuda::GpuFloor& f = *floor;
    std::printf("device: %s\n", f.device_name.c_str());
    std::printf("%-28s %12s %12s %s\n", "floor", "measured", "known", "");
    std::printf("%-28s %9.2f TB/s %9.2f TB/s %s\n", "copy bandwidth (r+w)",
                f.copy_bytes_per_second / 1e12, f.known_copy / 1e12,
                f.copy_suspect ? "SUSPECT (>10% under known)" : "");
    std::printf("%-28s %7.1f TFLOP/s %7.1f TFLOP/s %s\n", "bf16 GEMM 8192^3",
                f.bf16_flops_per_second / 1e12, f.known_bf16 / 1e12,
                f.gemm_suspect ? "SUSPECT (>10% under known)" : "");
    j = {{"device", f.device_name},
         {"copy_bytes_per_s", f.copy_bytes_per_second},
         {"bf16_flops_per_s", f.bf16_flops_per_second},
         {"known_copy_bytes_per_s", f.known_copy},
         {"known_bf16_flops_per_s", f.known_bf16},
         {"copy_suspect", f.copy_suspect},
         {"gemm_suspect", f.gemm_suspect}};
  }
#endif
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "forge bench: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

int RunModel(const std::string& path, const std::string& device, int pp, int tg, int reps,
             const std::string& json_path) {
  auto backend = CreateBackend(device);
  if (!backend.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", backend.status().ToString().c_str());
    return 1;
  }
  auto model = Model::Load(path, backend->get(), StderrProgressBar("loading"));
  if (!model.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  ModelBenchOptions o;
  int threads = 0;
#ifdef FORGE_HAVE_CUDA
  if ((*backend)->name() == "cuda") {
    auto floor = cuda::MeasureGpuFloor();
    if (!floor.ok()) {
      std::fprintf(stderr, "forge bench: %s\n", floor.status().ToString().c_str());
      return 1;
    }
    o.copy_bytes_per_s = floor->copy_bytes_per_second;
    o.flops_per_s = floor->bf16_flops_per_second;
  }
#endif
  if ((*backend)->name() != "cuda") {
    CpuCopyBandwidth bw = MeasureCpuCopyBandwidth();
    threads = bw.threads;
    o.copy_bytes_per_s = bw.bytes_per_second;
    o.flops_per_s = MeasureCpuMatmulRate();
  }
  o.pp_tokens = pp;
  o.tg_tokens = tg;
  o.repetitions = reps;
  auto r = RunModelBench(**model, o);
  if (!r.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const ModelConfig& c = (*model)->config();
  std::printf("model: %s (%s)\n", path.c_str(), c.Summary().c_str());
  std::printf("backend: %s (%d host threads); floors: copy %.1f GB/s, matmul %.1f GFLOP/s\n",
              r->backend.c_str(), threads, o.copy_bytes_per_s / 1e9, o.flops_per_s / 1e9);
  std::printf("| %-8s | %14s | %14s | %9s |\n", "test", "tokens/s", "floor tok/s", "of floor");
  std::printf("| %-8s | %14.2f | %14.2f | %8.1f%% |\n", ("pp" + std::to_string(pp)).c_str(),
              r->pp_tokens_per_s, r->pp_floor_tokens_per_s,
              100.0 * r->pp_tokens_per_s / r->pp_floor_tokens_per_s);
  std::printf("| %-8s | %14.2f | %14.2f | %8.1f%% |\n", ("tg" + std::to_string(tg)).c_str(),
              r->tg_tokens_per_s, r->tg_floor_tokens_per_s,
              100.0 * r->tg_tokens_per_s / r->tg_floor_tokens_per_s);
  std::printf("decode bytes/token: %.1f MB weights + %.2f MB KV\n",
              r->weight_bytes_per_token / 1e6, r->kv_bytes_per_token / 1e6);
  if (!json_path.empty()) {
    nlohmann::json j = {{"model", path},
                        {"backend", r->backend},
                        {"threads", threads},
                        {"copy_bytes_per_s", o.copy_bytes_per_s},
                        {"matmul_flops_per_s", o.flops_per_s},
                        {"pp_tokens", pp},
                        {"tg_tokens", tg},
                        {"pp_tokens_per_s", r->pp_tokens_per_s},
                        {"pp_floor_tokens_per_s", r->pp_floor_tokens_per_s},
                        {"tg_tokens_per_s", r->tg_tokens_per_s},
                        {"tg_floor_tokens_per_s", r->tg_floor_tokens_per_s},
                        {"weight_bytes_per_token", r->weight_bytes_per_token},
                        {"kv_bytes_per_token", r->kv_bytes_per_token}};
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    bool floor = false;
    std::string device = "auto", json, model;
    int pp = 512, tg = 128, reps = 3;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure speed against the machine's floors");
  cmd->add_flag("--floor", args->floor, "Measure copy bandwidth and GEMM rate of the device");
  cmd->add_option("--device", args->device, "auto|cpu|cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--json", args->json, "Also write the results as JSON to this file");
  cmd->add_option("-m,--model", args->model, "GGUF model: pp/tg throughput beside the floors");
  cmd->add_option("-p,--pp", args->pp, "Prompt tokens of the prefill test (0: skip)");
  cmd->add_option("-n,--tg", args->tg, "Generated tokens of the decode test (0: skip)");
  cmd->add_option("-r,--repetitions", args->reps, "Timed repetitions (median)");
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      if (!args->model.empty()) {
        return RunModel(args->model, args->device, args->pp, args->tg, args->reps, args->json);
      }
      if (!args->floor) {
        std::fprintf(stderr, "forge bench: give -m MODEL or --floor\n");
        return 2;
      }
      return RunFloor(args->device, args->json);
    };
  });
}

}  // namespace forge::cli
