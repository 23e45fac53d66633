// forge bench --allreduce [--tensor-parallel N]: the in-place F32 all-reduce of one step's
// activations (T x 4096 floats) over N GPUs through NCCL, op by op and recorded in CUDA graphs,
// beside the ring all-reduce's floor from the peer bandwidth measured now
// (backend/cuda/allreduce_bench.h).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/allreduce_bench.h"
#include "backend/cuda/device.h"
#endif

namespace forge::cli {

bool WriteJson(const std::string& path, const nlohmann::json& j);  // bench_command.cc

#ifdef FORGE_HAVE_CUDA
namespace {

std::string Bytes(int64_t b) {
  char buf[32];
  if (b >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  }
  return buf;
}

std::string Micros(double seconds) {
  if (seconds <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", seconds * 1e6);
  return buf;
}

std::string Ratio(double seconds, double floor) {
  if (seconds <= 0 || floor <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", seconds / floor);
  return buf;
}

}  // namespace
#endif

int RunAllReduceBench(const std::string& device, const std::string& json_path, int tensor_parallel,
                      int iterations) {
#ifndef FORGE_HAVE_CUDA
  (void)device, (void)json_path, (void)tensor_parallel, (void)iterations;
  std::fprintf(stderr, "forge bench --allreduce: this build has no CUDA backend\n");
  return 1;
#else
  if (device == "cpu") {
    std::fprintf(stderr, "forge bench --allreduce: times NCCL between GPUs; use --device cuda\n");
    return 1;
  }
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "forge bench --allreduce: %s\n", cuda::NoDeviceReason().c_str());
    return 1;
  }
  cuda::AllReduceBenchOptions o;
  o.n_gpus = tensor_parallel;
  if (iterations > 0) o.iterations = iterations;
  auto res = cuda::RunAllReduceBench(o);
  if (!res.ok()) {
    std::fprintf(stderr, "forge bench --allreduce: %s\n", res.status().ToString().c_str());
    return 1;
  }
  const cuda::AllReduceBench& b = *res;
  const int n = b.n_gpus;
  std::printf("all-reduce over N = %d GPUs (%s), %s; in place, F32, messages of T x %lld floats\n",
              n, b.device_name.c_str(), b.collective.c_str(), static_cast<long long>(b.hidden));
  std::printf(
      "peer bandwidth cuda:0 <-> cuda:1: %.1f GB/s each way (%s copies, both directions at "
      "once%s)\n",
      b.peer_bytes_per_second / 1e9, Bytes(o.peer_bytes).c_str(),
      b.peer_access ? "" : "; NO PEER ACCESS: through the host");
  std::printf(
      "floor = 2(N-1)/N x message bytes / peer bandwidth (what a ring all-reduce sends and "
      "receives per GPU); times are the mean of %d all-reduces, one thread per GPU; graph: all "
      "%d recorded in one CUDA graph per GPU (as decode runs them)\n\n",
      b.iterations, b.iterations);
  std::printf("| %5s | %10s | %9s | %10s | %9s | %9s | %11s | %11s |\n", "T", "message", "eager us",
              "eager GB/s", "graph us", "floor us", "eager/floor", "graph/floor");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------:", "-----------:", "----------:",
              "-----------:", "----------:", "----------:", "------------:", "------------:");
  nlohmann::json rows = nlohmann::json::array();
  const double ring = 2.0 * (n - 1) / n;
  for (const cuda::AllReduceBenchRow& r : b.rows) {
    const double bus = r.eager_seconds > 0 ? ring * r.bytes / r.eager_seconds : 0;
    std::printf("| %5lld | %10s | %9s | %10.1f | %9s | %9s | %11s | %11s |\n",
                static_cast<long long>(r.tokens), Bytes(r.bytes).c_str(),
                Micros(r.eager_seconds).c_str(), bus / 1e9, Micros(r.graph_seconds).c_str(),
                Micros(r.floor_seconds).c_str(), Ratio(r.eager_seconds, r.floor_seconds).c_str(),
                Ratio(r.graph_seconds, r.floor_seconds).c_str());
    rows.push_back({{"tokens", r.tokens},
                    {"bytes", r.bytes},
                    {"eager_seconds", r.eager_seconds},
                    {"graph_seconds", r.graph_seconds},
                    {"floor_seconds", r.floor_seconds},
                    {"eager_bus_bytes_per_s", bus}});
  }
  std::printf(
      "\n(eager GB/s: 2(N-1)/N x bytes / eager time, the bus bandwidth nccl-tests reports, to "
      "compare with the peer bandwidth; graph: '-' where not timed)\n");
  if (!json_path.empty()) {
    nlohmann::json j = {{"n_gpus", n},
                        {"device", b.device_name},
                        {"collective", b.collective},
                        {"hidden", b.hidden},
                        {"iterations", b.iterations},
                        {"peer_bytes_per_s", b.peer_bytes_per_second},
                        {"peer_access", b.peer_access},
                        {"rows", rows}};
    if (!WriteJson(json_path, j)) return 1;
  }
  return 0;
#endif
}

}  // namespace forge::cli
