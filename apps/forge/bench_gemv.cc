// forge bench --gemv: the quantized decode GEMV's weight bandwidth per block format (m = 1, F16
// activations, 14336 x 4096 and 4096 x 14336 rotated over >= 4x L2) beside the copy floor
// measured now, and F16 weights through cuBLAS and gemv_cuda on the same shapes; then the fused
// quantized GEMM (m = 128 and 512, or --seqs; Q4_0, Q4_K, Q6_K, Q8_0) beside the bf16 GEMM floor
// and the dequantize + cuBLAS path it replaced.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/device.h"
#include "backend/cuda/floor/gpu_floor.h"
#include "backend/cuda/matmul/gemv_quant_bench.h"
#endif

namespace forge::cli {

bool WriteJson(const std::string& path, const nlohmann::json& j);  // bench_command.cc

int RunGemvBench(const std::string& device, const std::string& json_path, int repetitions,
                 const std::vector<int>& gemm_rows,
                 const std::vector<std::pair<int64_t, int64_t>>& shapes) {
#ifndef FORGE_HAVE_CUDA
  (void)device, (void)json_path, (void)repetitions, (void)gemm_rows, (void)shapes;
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
  if (!shapes.empty()) o.shapes = shapes;
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

  cuda::GemmQuantBenchOptions go;
  if (repetitions > 0) go.repetitions = repetitions;
  if (!gemm_rows.empty()) go.m = gemm_rows;
  if (!shapes.empty()) go.shapes = shapes;
  auto grows = cuda::RunGemmQuantBench(go);
  if (!grows.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", grows.status().ToString().c_str());
    return 1;
  }
  const double bf16 = f.bf16_flops_per_second;
  std::printf(
      "\nquantized GEMM: activations and output %s; floor: dense bf16 GEMM %.1f TFLOP/s "
      "(cuBLAS 8192^3)%s\n\n",
      DTypeName(go.x_type), bf16 / 1e12, f.gemm_suspect ? " SUSPECT (>10% under known)" : "");
  std::printf(
      "| %-7s | %13s | %3s | %6s | %9s | %7s | %7s | %14s | %7s | %7s | %7s | %8s | %8s | %7s "
      "| %7s |\n",
      "weights", "n x k", "m", "copies", "fused us", "TFLOP/s", "of bf16", "dequant+cuBLAS",
      "TFLOP/s", "of bf16", "speedup", "reg us", "mma us", "TFLOP/s", "TB/s");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "---------",
              "--------------:", "----:", "-------:", "----------:", "--------:", "--------:",
              "---------------:", "--------:", "--------:", "--------:", "---------:", "---------:",
              "--------:", "--------:");
  nlohmann::json jgemm = nlohmann::json::array();
  auto of_floor = [&](double rate) { return bf16 > 0 ? 100.0 * rate / bf16 : 0.0; };
  for (const cuda::GemmQuantBenchRow& r : *grows) {
    const std::string shape = std::to_string(r.n) + " x " + std::to_string(r.k);
    char reg[32] = "-", mma[32] = "-", mma_rate[32] = "-", mma_bw[32] = "-";
    if (r.reg_seconds > 0) std::snprintf(reg, sizeof reg, "%.1f", r.reg_seconds * 1e6);
    if (r.mma_seconds > 0) {
      std::snprintf(mma, sizeof mma, "%.1f", r.mma_seconds * 1e6);
      std::snprintf(mma_rate, sizeof mma_rate, "%.1f",
                    2.0 * r.m * r.n * r.k / r.mma_seconds / 1e12);
      std::snprintf(mma_bw, sizeof mma_bw, "%.2f", r.weight_bytes / r.mma_seconds / 1e12);
    }
    std::printf(
        "| %-7s | %13s | %3lld | %6d | %9.1f | %7.1f | %6.1f%% | %11.1f us | %7.1f | %6.1f%% | "
        "%6.2fx | %8s | %8s | %7s | %7s |\n",
        r.weights.c_str(), shape.c_str(), static_cast<long long>(r.m), r.copies,
        r.fused_seconds * 1e6, r.fused_flops_per_second / 1e12, of_floor(r.fused_flops_per_second),
        r.slab_seconds * 1e6, r.slab_flops_per_second / 1e12, of_floor(r.slab_flops_per_second),
        r.slab_seconds / r.fused_seconds, reg, mma, mma_rate, mma_bw);
    jgemm.push_back({{"weights", r.weights},
                     {"n", r.n},
                     {"k", r.k},
                     {"m", r.m},
                     {"weight_bytes", r.weight_bytes},
                     {"copies", r.copies},
                     {"fused_seconds", r.fused_seconds},
                     {"fused_flops_per_s", r.fused_flops_per_second},
                     {"fused_of_bf16_floor", bf16 > 0 ? r.fused_flops_per_second / bf16 : 0.0},
                     {"slab_seconds", r.slab_seconds},
                     {"slab_flops_per_s", r.slab_flops_per_second},
                     {"slab_of_bf16_floor", bf16 > 0 ? r.slab_flops_per_second / bf16 : 0.0},
                     {"reg_seconds", r.reg_seconds},
                     {"mma_seconds", r.mma_seconds}});
  }
  std::printf(
      "\n(TFLOP/s: 2 m n k / time of one call; fused: gemm_quant_cuda; dequant+cuBLAS: the weights "
      "dequantized to %s in 128 MiB slabs, each followed by cuBLAS: the backend's path where it "
      "does not prefer the fused GEMM; reg: the register-decoding GEMV where it applies; mma: the "
      "tensor-core quantized matmul where it applies, its TFLOP/s and weight bytes / time)\n",
      DTypeName(go.x_type));
  if (!json_path.empty()) {
    nlohmann::json j = {{"device", f.device_name},
                        {"copy_bytes_per_s", copy},
                        {"copy_suspect", f.copy_suspect},
                        {"bf16_flops_per_s", bf16},
                        {"gemm_suspect", f.gemm_suspect},
                        {"x_type", DTypeName(o.x_type)},
                        {"repetitions", o.repetitions},
                        {"rows", jrows},
                        {"gemm_rows", jgemm}};
    if (!WriteJson(json_path, j)) return 1;
  }
  return 0;
#endif
}

}  // namespace forge::cli
