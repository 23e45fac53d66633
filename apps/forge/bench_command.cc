// forge bench --floor: the machine's floors (DESIGN.md), printed beside the card's known figures.
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/cpu/memory_floor.h"
#include "commands.h"
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

}  // namespace

void AddBenchCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    bool floor = false;
    std::string device = "auto", json;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure speed against the machine's floors");
  cmd->add_flag("--floor", args->floor, "Measure copy bandwidth and GEMM rate of the device");
  cmd->add_option("--device", args->device, "auto|cpu|cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--json", args->json, "Also write the results as JSON to this file");
  cmd->callback([args, runner] {
    *runner = [args]() -> int {
      if (!args->floor) {
        std::fprintf(stderr, "forge bench: give --floor (model benchmarks come with -m)\n");
        return 2;
      }
      return RunFloor(args->device, args->json);
    };
  });
}

}  // namespace forge::cli
