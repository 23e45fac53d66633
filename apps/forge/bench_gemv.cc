// forge bench --gemv: the quantized decode GEMV's weight bandwidth per block format (m = 1, F16
// activations, 14336 x 4096 and 4096 x 14336 rotated over >= 4x L2) beside the copy floor
// measured now, and F16 weights through cuBLAS and gemv_cuda on the same shapes.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/device.h"
#include "backend/cuda/floor/gpu_floor.h"
#include "backend/cuda/matmul/gemv_quant_bench.h"
#endif

namespace forge::cli {

bool WriteJson(const std::string& path, const nlohmann::json& j);  // bench_command.cc

int RunGemvBench(const std::string& device, const std::string& json_path, int repetitions) {
#ifndef FORGE_HAVE_CUDA
  (void)device, (void)json_path, (void)repetitions;
  std::fprintf(stderr, "forge bench --gemv: this build has no CUDA backend\n");
  return 1;
#else
  if (device == "cpu") {
    std::fprintf(stderr, "forge bench --gemv: times CUDA kernels; use --device cuda\n");
    return 1;
  }
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "forge bench --gemv: %s\n", cuda::NoDeviceReason().c_str());
    return 1;
  }
  auto floor = cuda::MeasureGpuFloor();
  if (!floor.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", floor.status().ToString().c_str());
    return 1;
  }
  cuda::GemvQuantBenchOptions o;
  if (repetitions > 0) o.repetitions = repetitions;
  auto rows = cuda::RunGemvQuantBench(o);
  if (!rows.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", rows.status().ToString().c_str());
    return 1;
  }
  const cuda::GpuFloor& f = *floor;
  const double copy = f.copy_bytes_per_second;
  std::printf("device: %s; floor: copy %.2f TB/s (read + written)%s\n", f.device_name.c_str(),
              copy / 1e12, f.copy_suspect ? " SUSPECT (>10% under known)" : "");
  std::printf("activations %s, F32 out; median of %d rounds over copies of each matrix\n\n",
              DTypeName(o.x_type), o.repetitions);
  std::printf("| %-14s | %13s | %2s | %9s | %6s | %9s | %9s | %8s |\n", "weights", "n x k", "m",
              "MB", "copies", "time us", "TB/s", "of copy");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------", "--------------:", "---:",
              "----------:", "-------:", "----------:", "----------:", "---------:");
  nlohmann::json jrows = nlohmann::json::array();
  for (const cuda::GemvQuantBenchRow& r : *rows) {
    const std::string shape = std::to_string(r.n) + " x " + std::to_string(r.k);
    std::printf("| %-14s | %13s | %2lld | %9.2f | %6d | %9.2f | %9.3f | %7.1f%% |\n",
                r.weights.c_str(), shape.c_str(), static_cast<long long>(r.m), r.weight_bytes / 1e6,
                r.copies, r.seconds * 1e6, r.bytes_per_second / 1e12,
                copy > 0 ? 100.0 * r.bytes_per_second / copy : 0.0);
    jrows.push_back({{"weights", r.weights},
                     {"n", r.n},
                     {"k", r.k},
                     {"m", r.m},
                     {"weight_bytes", r.weight_bytes},
                     {"copies", r.copies},
                     {"seconds", r.seconds},
                     {"bytes_per_s", r.bytes_per_second}});
  }
  std::printf(
      "\n(TB/s: weight bytes as stored / time of one call; the issue's target is >= 3.6 TB/s "
      "per format on H200)\n");
  if (!json_path.empty()) {
    nlohmann::json j = {{"device", f.device_name},        {"copy_bytes_per_s", copy},
                        {"copy_suspect", f.copy_suspect}, {"x_type", DTypeName(o.x_type)},
                        {"repetitions", o.repetitions},   {"rows", jrows}};
    if (!WriteJson(json_path, j)) return 1;
  }
  return 0;
#endif
}

}  // namespace forge::cli
