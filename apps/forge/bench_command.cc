// forge bench --floor: the machine's floors (DESIGN.md), printed beside the card's known figures.
// forge bench -m MODEL: pp/tg throughput beside its floors; with --batched, the n_seqs sweep;
// with --embed, an embedding model's sequences per second through the engine.
// forge bench --attention: the CUDA attention kernels alone (decode TB/s, prefill TFLOP/s).
// forge bench --gemv: the quantized decode GEMV and the fused quantized GEMM per weight format
// (bench_gemv.cc).
// forge bench --mask -m MODEL: constrained decoding's host work per token (bench_mask.cc).
// forge bench --allreduce: the tensor-parallel all-reduce over N GPUs beside its floor
// (bench_allreduce.cc).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/memory_floor.h"
#include "commands.h"
#include "engine/engine.h"
#include "model/attention_bench.h"
#include "model/model_bench.h"
#include "model_flags.h"
#include "progress_bar.h"
#include "runtime/backends.h"
#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/device.h"
#include "backend/cuda/floor/gpu_floor.h"
#endif

namespace forge::cli {

// bench_gemv.cc: forge bench --gemv.
// gemm_rows: the fused GEMM's activation rows (empty: its default).
int RunGemvBench(const std::string& device, const std::string& json_path, int repetitions,
                 const std::vector<int>& gemm_rows,
                 const std::vector<std::pair<int64_t, int64_t>>& shapes);
// bench_mask.cc: forge bench --mask -m MODEL (constrained decoding's host work per token).
int RunMaskBench(const std::string& model_path, const std::string& schema_path, int generations,
                 const std::string& json_path);
// bench_allreduce.cc: forge bench --allreduce (tensor_parallel 0: every GPU; iterations 0: the
// bench's default).
int RunAllReduceBench(const std::string& device, const std::string& json_path, int tensor_parallel,
                      int iterations);

// Writes j to path (pretty-printed); false, with a message, when it cannot.
bool WriteJson(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) std::fprintf(stderr, "forge bench: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

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
    const CpuCopyBandwidth rd = MeasureCpuReadBandwidth();
    std::printf("memory read bandwidth: %.2f GB/s (bytes read, %lld MiB buffers)\n",
                rd.bytes_per_second / 1e9, static_cast<long long>(rd.buffer_bytes >> 20));
    j = {{"device", "cpu"},
         {"threads", bw.threads},
         {"copy_bytes_per_s", bw.bytes_per_second},
         {"read_bytes_per_s", rd.bytes_per_second}};
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
  if (!json_path.empty() && !WriteJson(json_path, j)) return 1;
  return 0;
}

// Floors of the model's backend, measured now (DESIGN.md): copy bandwidth and GEMM rate.
struct Floors {
  double copy_bytes_per_s = 0;
  double flops_per_s = 0;
  int threads = 0;              // CPU threads of the copy measurement (0 on a GPU)
  double read_bytes_per_s = 0;  // CPU: bytes read per second on those threads (0 on a GPU)
};

StatusOr<Floors> MeasureFloors(Backend& backend) {
  Floors f;
#ifdef FORGE_HAVE_CUDA
  if (backend.name() == "cuda") {
    ASSIGN_OR_RETURN(cuda::GpuFloor floor, cuda::MeasureGpuFloor());
    f.copy_bytes_per_s = floor.copy_bytes_per_second;
    f.flops_per_s = floor.bf16_flops_per_second;
    return f;
  }
#endif
  CpuCopyBandwidth bw = MeasureCpuCopyBandwidth();
  f.threads = bw.threads;
  f.copy_bytes_per_s = bw.bytes_per_second;
  f.read_bytes_per_s = MeasureCpuReadBandwidth().bytes_per_second;
  f.flops_per_s = MeasureCpuMatmulRate();
  (void)backend;
  return f;
}

// The model on its backends (one per tensor-parallel rank), and the first one's floors measured
// now. Under tensor parallelism the model's bytes per step are one rank's: each GPU reads its
// share at once, so the floor is one GPU's share over its bandwidth (all-reduces not counted).
struct Loaded {
  std::unique_ptr<LoadedModel> loaded;
  ModelRunner* model = nullptr;
  Floors floors;
};

// logits: the modes that sample (pp/tg), which an embedding model cannot run.
StatusOr<Loaded> LoadModel(const std::string& path, const std::string& device,
                           const ModelFlags& flags, bool logits = true) {
  Loaded l;
  ASSIGN_OR_RETURN(l.loaded, LoadModelOn(path, device, flags, StderrProgressBar("loading")));
  l.model = l.loaded->model.get();
  if (logits) {
    const Status st = l.model->CheckHasLogits();
    if (!st.ok()) return Status(st.code(), st.message() + " (or forge bench --embed)");
  }
  ASSIGN_OR_RETURN(l.floors, MeasureFloors(l.loaded->backend()));
  return l;
}

std::string Percent(double got, double floor) {
  if (floor <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * got / floor);
  return buf;
}

void PrintTensorParallel(const ModelRunner& m) {
  if (m.tensor_parallel() == 1) return;
  std::printf(
      "tensor parallel: %d GPUs, each holding %.1f MB of weights; floors are one GPU's share "
      "over its bandwidth (all-reduces not counted)\n",
      m.tensor_parallel(), WeightMatrixBytes(m.weights(), true) / 1e6);
}

void PrintGraphStats(const ModelRunner& m) {
  const RunnerStats& st = m.stats();
  std::printf("graphs: %lld captures, %lld replays; %lld eager forwards\n",
              static_cast<long long>(st.graph_captures), static_cast<long long>(st.graph_replays),
              static_cast<long long>(st.eager_forwards));
}

nlohmann::json StatsJson(const ModelRunner& m) {
  const RunnerStats& st = m.stats();
  return {{"graph_captures", st.graph_captures},
          {"graph_replays", st.graph_replays},
          {"eager_forwards", st.eager_forwards}};
}

struct ModelArgs {
  std::string path, device, json;
  ModelFlags flags;
  int pp = 512, tg = 128, reps = 3;
  std::vector<int> seqs = {1, 16, 64, 128};
  int prefill_chunk = 2048;
};

int RunModel(const ModelArgs& a) {
  auto loaded = LoadModel(a.path, a.device, a.flags);
  if (!loaded.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  ModelRunner& model = *loaded->model;
  const Floors& floors = loaded->floors;
  ModelBenchOptions o;
  o.copy_bytes_per_s = floors.copy_bytes_per_s;
  o.flops_per_s = floors.flops_per_s;
  o.pp_tokens = a.pp;
  o.tg_tokens = a.tg;
  o.repetitions = a.reps;
  auto r = RunModelBench(model, o);
  if (!r.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const ModelConfig& c = model.config();
  const int threads = floors.threads;
  const int pp = a.pp, tg = a.tg;
  std::printf("model: %s (%s)\n", a.path.c_str(), c.Summary().c_str());
  PrintTensorParallel(model);
  std::printf(
      "backend: %s (%d host threads), activations %s; floors: copy %.1f GB/s, "
      "matmul %.1f GFLOP/s\n",
      r->backend.c_str(), threads, DTypeName(model.dtype()), o.copy_bytes_per_s / 1e9,
      o.flops_per_s / 1e9);
  std::printf("| %-8s | %14s | %14s | %9s |\n", "test", "tokens/s", "floor tok/s", "of floor");
  std::printf("| %-8s | %14.2f | %14.2f | %9s |\n", ("pp" + std::to_string(pp)).c_str(),
              r->pp_tokens_per_s, r->pp_floor_tokens_per_s,
              Percent(r->pp_tokens_per_s, r->pp_floor_tokens_per_s).c_str());
  std::printf("| %-8s | %14.2f | %14.2f | %9s |\n", ("tg" + std::to_string(tg)).c_str(),
              r->tg_tokens_per_s, r->tg_floor_tokens_per_s,
              Percent(r->tg_tokens_per_s, r->tg_floor_tokens_per_s).c_str());
  std::printf("decode bytes/token: %.1f MB weights + %.2f MB KV\n", r->weight_bytes_per_token / 1e6,
              r->kv_bytes_per_token / 1e6);
  if (c.n_expert > 0) {
    // A step reads the experts its tokens chose, not all of them: the floors above are too low.
    std::printf(
        "note: a mixture of experts; these floors count every expert's weights, a step "
        "reads only the %lld of %lld each token chose (a floor by the routed experts is "
        "not measured yet)\n",
        (long long)c.n_expert_used, (long long)c.n_expert);
  }
  // The CPU's decode floor at its read bandwidth (a decode step reads, it hardly writes).
  const double read_floor =
      floors.read_bytes_per_s > 0
          ? floors.read_bytes_per_s / (r->weight_bytes_per_token + r->kv_bytes_per_token)
          : 0;
  if (read_floor > 0 && tg > 0) {
    std::printf("cpu read bandwidth %.1f GB/s: tg floor %.2f tokens/s, %s of it\n",
                floors.read_bytes_per_s / 1e9, read_floor,
                Percent(r->tg_tokens_per_s, read_floor).c_str());
  }
  PrintGraphStats(model);
  if (!a.json.empty()) {
    nlohmann::json j = {{"model", a.path},
                        {"backend", r->backend},
                        {"dtype", DTypeName(model.dtype())},
                        {"graphs", !a.flags.no_graphs},
                        {"tensor_parallel", model.tensor_parallel()},
                        {"threads", threads},
                        {"copy_bytes_per_s", o.copy_bytes_per_s},
                        {"read_bytes_per_s", floors.read_bytes_per_s},
                        {"tg_read_floor_tokens_per_s", read_floor},
                        {"matmul_flops_per_s", o.flops_per_s},
                        {"pp_tokens", pp},
                        {"tg_tokens", tg},
                        {"pp_tokens_per_s", r->pp_tokens_per_s},
                        {"pp_floor_tokens_per_s", r->pp_floor_tokens_per_s},
                        {"tg_tokens_per_s", r->tg_tokens_per_s},
                        {"tg_floor_tokens_per_s", r->tg_floor_tokens_per_s},
                        {"weight_bytes_per_token", r->weight_bytes_per_token},
                        {"kv_bytes_per_token", r->kv_bytes_per_token},
                        {"stats", StatsJson(model)}};
    if (!WriteJson(a.json, j)) return 1;
  }
  return 0;
}

// An embedding model through the engine as the server runs it: for each n in --seqs, n inputs of
// --pp tokens embedded together (each its own request; the engine's steps take up to
// max(--pp, --prefill-chunk) tokens), the median of --repetitions rounds after one warm-up, as
// sequences and tokens per second beside the floor: the larger of the FLOPs over the GEMM rate
// (2 * the layers' matrix parameters per token, plus attention's 4 * L^2 * q_dim per layer and
// sequence, halved when causal) and the steps' weight reads over the copy bandwidth.
int RunEmbedBench(const ModelArgs& a) {
  auto loaded = LoadModel(a.path, a.device, a.flags, /*logits=*/false);
  if (!loaded.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  ModelRunner& model = *loaded->model;
  const Floors& floors = loaded->floors;
  const ModelConfig& c = model.config();
  if (c.pooling == PoolingType::kNone) {
    std::fprintf(stderr, "forge bench --embed: %s does not embed (no pooling_type)\n",
                 a.path.c_str());
    return 1;
  }
  if (a.pp < 1 || a.pp > c.n_ctx_train) {
    std::fprintf(stderr, "forge bench --embed: -p %d must be in [1, %lld] (trained positions)\n",
                 a.pp, static_cast<long long>(c.n_ctx_train));
    return 1;
  }
  double layer_params = 0, layer_bytes = 0;  // the blocks' matrices, as stored
  for (const auto& t : model.file().tensors()) {
    if (t.name.rfind("blk.", 0) == 0 && t.dims.size() >= 2) {
      layer_params += static_cast<double>(t.n_elements);
      layer_bytes += static_cast<double>(t.n_bytes);
    }
  }
  const double L = a.pp;
  const double seq_flops = 2.0 * layer_params * L + (c.causal ? 2.0 : 4.0) * L * L *
                                                        static_cast<double>(c.q_dim()) *
                                                        static_cast<double>(c.n_layer);
  const int step_tokens = std::max(a.pp, a.prefill_chunk);
  std::printf("model: %s (%s)\n", a.path.c_str(), c.Summary().c_str());
  std::printf(
      "backend: %s, activations/KV %s; floors: copy %.1f GB/s, GEMM %.1f GFLOP/s; inputs of %d "
      "tokens, steps of <= %d tokens; %.3f GFLOP and the layers' %.1f MB of weights a step\n",
      model.backend().name().c_str(), DTypeName(model.dtype()), floors.copy_bytes_per_s / 1e9,
      floors.flops_per_s / 1e9, a.pp, step_tokens, seq_flops / 1e9, layer_bytes / 1e6);
  std::printf("\n| %6s | %6s | %11s | %11s | %6s | %11s | %6s |\n", "n_seqs", "steps", "seq/s",
              "floor", "%", "tokens/s", "ms");
  std::printf("|-------:|-------:|------------:|------------:|-------:|------------:|-------:|\n");
  nlohmann::json rows = nlohmann::json::array();
  uint32_t rng = 12345;
  for (int n : a.seqs) {
    EngineOptions o;
    o.max_num_seqs = std::max(n, 1);
    o.max_num_batched_tokens = std::max(step_tokens, o.max_num_seqs);
    o.ctx_size = a.pp;
    o.num_kv_blocks = static_cast<int32_t>(
        (std::min<int64_t>(int64_t{n} * a.pp, 2 * int64_t{step_tokens}) + 15) / 16 + n);
    auto engine = Engine::Create(model, nullptr, o);
    if (!engine.ok()) {
      std::fprintf(stderr, "forge bench: %s\n", engine.status().ToString().c_str());
      return 1;
    }
    // One round: n inputs of pp random ids, submitted together, run to the end.
    auto round = [&]() -> StatusOr<std::pair<double, int64_t>> {
      const int64_t steps0 = (*engine)->stats().steps;
      std::vector<RequestHandle> handles;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        EngineRequest r;
        r.embed = true;
        r.prompt_ids.resize(a.pp);
        for (int32_t& id : r.prompt_ids) {
          rng = rng * 1664525u + 1013904223u;
          id = static_cast<int32_t>((rng >> 8) % static_cast<uint32_t>(c.n_vocab));
        }
        ASSIGN_OR_RETURN(RequestHandle h, (*engine)->Submit(std::move(r)));
        handles.push_back(std::move(h));
      }
      RETURN_IF_ERROR((*engine)->RunUntilIdle());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (RequestHandle& h : handles) {
        RequestEvent ev;
        while (h.events->Next(&ev)) RETURN_IF_ERROR(ev.status);
      }
      return std::pair{s, (*engine)->stats().steps - steps0};
    };
    std::vector<double> times;
    int64_t steps = 0;
    for (int rep = 0; rep <= std::max(a.reps, 1); ++rep) {
      auto r = round();
      if (!r.ok()) {
        std::fprintf(stderr, "forge bench: %s\n", r.status().ToString().c_str());
        return 1;
      }
      if (rep == 0) continue;  // the warm-up
      times.push_back(r->first);
      steps = r->second;
    }
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    const double floor_s =
        std::max(floors.flops_per_s > 0 ? n * seq_flops / floors.flops_per_s : 0,
                 floors.copy_bytes_per_s > 0 ? steps * layer_bytes / floors.copy_bytes_per_s : 0);
    const double sps = n / t, floor_sps = floor_s > 0 ? n / floor_s : 0;
    std::printf("| %6d | %6lld | %11.2f | %11.2f | %6s | %11.1f | %6.2f |\n", n,
                static_cast<long long>(steps), sps, floor_sps, Percent(sps, floor_sps).c_str(),
                sps * a.pp, t * 1e3);
    rows.push_back({{"n_seqs", n},
                    {"tokens_per_seq", a.pp},
                    {"steps", steps},
                    {"seconds", t},
                    {"seq_per_s", sps},
                    {"seq_per_s_floor", floor_sps},
                    {"tokens_per_s", sps * a.pp}});
  }
  std::printf("\n(%% = measured / floor; each row the median of %d rounds after a warm-up)\n",
              std::max(a.reps, 1));
  if (!a.json.empty()) {
    nlohmann::json j = {{"model", a.path},
                        {"summary", c.Summary()},
                        {"backend", model.backend().name()},
                        {"dtype", DTypeName(model.dtype())},
                        {"copy_bytes_per_s", floors.copy_bytes_per_s},
                        {"flops_per_s", floors.flops_per_s},
                        {"tokens_per_seq", a.pp},
                        {"step_tokens", step_tokens},
                        {"seq_flops", seq_flops},
                        {"layer_weight_bytes", layer_bytes},
                        {"rows", rows}};
    if (!WriteJson(a.json, j)) return 1;
  }
  return 0;
}

// The n_seqs sweep (like llama-batched-bench): a markdown table, each figure beside its floor.
int RunBatched(const ModelArgs& a) {
  auto loaded = LoadModel(a.path, a.device, a.flags);
  if (!loaded.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", loaded.status().ToString().c_str());
    return 1;
  }
  ModelRunner& model = *loaded->model;
  const Floors& floors = loaded->floors;
  BatchedBenchOptions o;
  o.n_seqs = a.seqs;
  o.pp_tokens = a.pp;
  o.tg_tokens = a.tg;
  o.prefill_chunk_tokens = a.prefill_chunk;
  o.copy_bytes_per_s = floors.copy_bytes_per_s;
  o.flops_per_s = floors.flops_per_s;
  auto r = RunBatchedBench(model, o);
  if (!r.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", r.status().ToString().c_str());
    return 1;
  }
  const ModelConfig& c = model.config();
  std::printf("model: %s (%s)\n", a.path.c_str(), c.Summary().c_str());
  PrintTensorParallel(model);
  std::printf(
      "backend: %s, activations/KV %s, graphs %s; floors: copy %.1f GB/s, "
      "GEMM %.1f GFLOP/s\n",
      r->backend.c_str(), DTypeName(r->dtype),
      !model.backend().SupportsGraphs() ? "none on this backend"
      : a.flags.no_graphs               ? "off"
                                        : "on",
      o.copy_bytes_per_s / 1e9, o.flops_per_s / 1e9);
  std::printf(
      "per sequence: pp %d + tg %d tokens; prefill in forward calls of <= %d tokens; "
      "KV pool %lld blocks of %d (%.2f MiB)\n",
      o.pp_tokens, o.tg_tokens, o.prefill_chunk_tokens, static_cast<long long>(r->kv_blocks),
      o.block_size, double(r->kv_blocks) * o.block_size * r->kv_bytes_per_token / (1 << 20));
  std::printf(
      "decode floor bytes per step: %.1f MB weights as stored (the backend holds "
      "%.1f MB) + %.4f MB K/V per sequence and position\n",
      r->weight_bytes_per_step / 1e6, r->backend_weight_bytes / 1e6, r->kv_bytes_per_token / 1e6);
  std::printf("\n| %6s | %5s | %5s | %11s | %11s | %6s | %11s | %11s | %6s | %11s | %9s |\n",
              "n_seqs", "PP", "TG", "S_PP t/s", "floor", "%", "S_TG t/s", "floor", "%", "S t/s",
              "graphs");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n",
              "-------:", "------:", "------:", "------------:", "------------:", "-------:",
              "------------:", "------------:", "-------:", "------------:", "----------:");
  nlohmann::json rows = nlohmann::json::array();
  for (const BatchedBenchRow& w : r->rows) {
    const std::string graphs =
        std::to_string(w.decode_graph_captures) + "/" + std::to_string(w.decode_graph_replays);
    std::printf(
        "| %6d | %5d | %5d | %11.2f | %11.2f | %6s | %11.2f | %11.2f | %6s | %11.2f | "
        "%9s |\n",
        w.n_seqs, o.pp_tokens, o.tg_tokens, w.s_pp, w.s_pp_floor,
        Percent(w.s_pp, w.s_pp_floor).c_str(), w.s_tg, w.s_tg_floor,
        Percent(w.s_tg, w.s_tg_floor).c_str(), w.s, graphs.c_str());
    rows.push_back({{"n_seqs", w.n_seqs},
                    {"prompt_tokens", w.prompt_tokens},
                    {"generated_tokens", w.generated_tokens},
                    {"prefill_calls", w.prefill_calls},
                    {"prefill_seconds", w.prefill_seconds},
                    {"decode_seconds", w.decode_seconds},
                    {"s_pp", w.s_pp},
                    {"s_pp_floor", w.s_pp_floor},
                    {"s_tg", w.s_tg},
                    {"s_tg_floor", w.s_tg_floor},
                    {"s", w.s},
                    {"s_floor", w.s_floor},
                    {"prefill_flops", w.prefill_flops},
                    {"decode_bytes", w.decode_bytes},
                    {"decode_graph_captures", w.decode_graph_captures},
                    {"decode_graph_replays", w.decode_graph_replays},
                    {"decode_eager_forwards", w.decode_eager_forwards}});
  }
  std::printf("\n(graphs: captures/replays in the timed decode steps; %% = measured / floor)\n");
  PrintGraphStats(model);
  if (!a.json.empty()) {
    nlohmann::json j = {{"model", a.path},
                        {"backend", r->backend},
                        {"dtype", DTypeName(r->dtype)},
                        {"graphs", !a.flags.no_graphs},
                        {"tensor_parallel", model.tensor_parallel()},
                        {"threads", floors.threads},
                        {"copy_bytes_per_s", o.copy_bytes_per_s},
                        {"flops_per_s", o.flops_per_s},
                        {"pp_tokens", o.pp_tokens},
                        {"tg_tokens", o.tg_tokens},
                        {"prefill_chunk_tokens", o.prefill_chunk_tokens},
                        {"block_size", o.block_size},
                        {"kv_blocks", r->kv_blocks},
                        {"weight_bytes_per_step", r->weight_bytes_per_step},
                        {"backend_weight_bytes", r->backend_weight_bytes},
                        {"kv_bytes_per_token", r->kv_bytes_per_token},
                        {"params_outside_embedding", r->params_outside_embedding},
                        {"rows", rows},
                        {"stats", StatsJson(model)}};
    if (!WriteJson(a.json, j)) return 1;
  }
  return 0;
}

// The attention kernels alone, beside the floors measured now: decode K/V bytes read per second
// against the copy bandwidth, prefill FLOP/s (causal: 4·B·H·S²·D / 2) against the GEMM rate.
int RunAttention(const std::string& device, const std::string& json_path, int trials) {
#ifndef FORGE_HAVE_CUDA
  (void)device, (void)json_path, (void)trials;
  std::fprintf(stderr, "forge bench --attention: this build has no CUDA backend\n");
  return 1;
#else
  if (device == "cpu") {
    std::fprintf(stderr,
                 "forge bench --attention: times the CUDA attention kernels; use --device cuda\n");
    return 1;
  }
  if (cuda::DeviceCount() == 0) {
    std::fprintf(stderr, "forge bench --attention: %s\n", cuda::NoDeviceReason().c_str());
    return 1;
  }
  auto backend = CreateBackend("cuda");
  auto floor = cuda::MeasureGpuFloor();
  auto info = cuda::GetDeviceInfo(0);
  if (!backend.ok() || !floor.ok() || !info.ok()) {
    const Status st = !backend.ok() ? backend.status()
                      : !floor.ok() ? floor.status()
                                    : info.status();
    std::fprintf(stderr, "forge bench: %s\n", st.ToString().c_str());
    return 1;
  }
  const cuda::GpuFloor& f = *floor;
  AttentionBenchOptions o;
  o.trials = trials;
  // Rotated K/V read per round: at least 4x the L2 cache (DESIGN.md), 50 MB assumed if unknown.
  o.rotate_bytes = 4 * (info->l2_bytes > 0 ? info->l2_bytes : int64_t{50} << 20);
  auto rows = RunAttentionBench(**backend, o);
  if (!rows.ok()) {
    std::fprintf(stderr, "forge bench: %s\n", rows.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "device: %s (L2 %lld MiB); floors: copy %.2f TB/s (read + written)%s, bf16 GEMM "
      "%.1f TFLOP/s%s\n",
      f.device_name.c_str(), static_cast<long long>(info->l2_bytes >> 20),
      f.copy_bytes_per_second / 1e12, f.copy_suspect ? " SUSPECT" : "",
      f.bf16_flops_per_second / 1e12, f.gemm_suspect ? " SUSPECT" : "");
  std::printf(
      "cache %s, q %s, block size %lld; median of %d trials; decode K/V rotated over "
      "copies reading >= %lld MiB per round\n\n",
      DTypeName(o.dtype), DTypeName(o.q_type), static_cast<long long>(o.block_size), o.trials,
      static_cast<long long>(o.rotate_bytes >> 20));
  std::printf("| %-42s | %10s | %14s | %15s | %15s | %8s |\n", "test", "time us", "work", "rate",
              "floor", "of floor");
  std::printf(
      "|%s|%s|%s|%s|%s|%s|\n", "--------------------------------------------",
      "-----------:", "---------------:", "----------------:", "----------------:", "---------:");
  nlohmann::json jrows = nlohmann::json::array();
  for (const AttentionBenchRow& r : *rows) {
    const bool pre = r.c.prefill;
    const double rate = (pre ? r.flops : r.kv_bytes) / r.seconds;
    const double floor_rate = pre ? f.bf16_flops_per_second : f.copy_bytes_per_second;
    char work[32], rate_s[32], floor_s[32];
    if (pre) {
      std::snprintf(work, sizeof work, "%.3f TFLOP", r.flops / 1e12);
      std::snprintf(rate_s, sizeof rate_s, "%.1f TFLOP/s", rate / 1e12);
      std::snprintf(floor_s, sizeof floor_s, "%.1f TFLOP/s", floor_rate / 1e12);
    } else {
      std::snprintf(work, sizeof work, "%.1f MB K/V", r.kv_bytes / 1e6);
      std::snprintf(rate_s, sizeof rate_s, "%.2f TB/s", rate / 1e12);
      std::snprintf(floor_s, sizeof floor_s, "%.2f TB/s", floor_rate / 1e12);
    }
    const std::string name = AttentionBenchCaseName(r.c);
    std::printf("| %-42s | %10.1f | %14s | %15s | %15s | %8s |\n", name.c_str(), r.seconds * 1e6,
                work, rate_s, floor_s, Percent(rate, floor_rate).c_str());
    jrows.push_back({{"test", name},
                     {"prefill", pre},
                     {"n_seqs", r.c.n_seqs},
                     {"seq_len", r.c.seq_len},
                     {"n_heads", r.c.n_heads},
                     {"n_kv_heads", r.c.n_kv_heads},
                     {"head_dim", r.c.head_dim},
                     {"seconds", r.seconds},
                     {"kv_bytes", r.kv_bytes},
                     {"flops", r.flops},
                     {"rate", rate},
                     {"floor", floor_rate},
                     {"copies", r.copies},
                     {"graphs", r.graphs}});
  }
  std::printf(
      "\n(decode: K and V bytes read / time against the copy bandwidth; prefill: causal "
      "FLOPs 4*B*H*S^2*D / 2 / time against the GEMM rate)\n");
  if (!json_path.empty()) {
    nlohmann::json j = {{"device", f.device_name},
                        {"copy_bytes_per_s", f.copy_bytes_per_second},
                        {"bf16_flops_per_s", f.bf16_flops_per_second},
                        {"copy_suspect", f.copy_suspect},
                        {"gemm_suspect", f.gemm_suspect},
                        {"l2_bytes", info->l2_bytes},
                        {"dtype", DTypeName(o.dtype)},
                        {"q_type", DTypeName(o.q_type)},
                        {"block_size", o.block_size},
                        {"trials", o.trials},
                        {"rotate_bytes", o.rotate_bytes},
                        {"rows", jrows}};
    if (!WriteJson(json_path, j)) return 1;
  }
  return 0;
#endif
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandRunner* runner) {
  struct Args {
    bool floor = false, batched = false, attention = false, embed = false;
    bool gemv = false, allreduce = false, mask = false;
    std::string schema;
    int generations = 40;
    std::vector<std::string> gemv_shapes;  // "NxK"
    ModelArgs m;
  };
  auto args = std::make_shared<Args>();
  args->m.device = "auto";
  CLI::App* cmd = app.add_subcommand("bench", "Measure speed against the machine's floors");
  cmd->add_flag("--floor", args->floor, "Measure copy bandwidth and GEMM rate of the device");
  cmd->add_flag("--attention", args->attention,
                "Time the CUDA attention kernels alone: decode K/V TB/s (64 x 4096, 1 x 32768, "
                "1 x 512, 1 x 2048) "
                "and prefill TFLOP/s (2 x 8192 causal), beside the floors");
  cmd->add_flag("--gemv", args->gemv,
                "Time the quantized decode GEMV per weight format (m = 1, 14336 x 4096 and "
                "4096 x 14336) beside the copy floor and F16 cuBLAS / gemv_cuda, and the fused "
                "quantized GEMM (m = 128, 512; or --seqs) beside the bf16 GEMM floor and "
                "dequantize + cuBLAS");
  cmd->add_option("--gemv-shapes", args->gemv_shapes,
                  "With --gemv: the weight shapes as NxK (n output rows, k inputs; k a multiple "
                  "of 256), e.g. 4096x4096,14336x4096")
      ->delimiter(',');
  cmd->add_flag("--allreduce", args->allreduce,
                "Time the tensor-parallel all-reduce (NCCL, in place, F32 T x 4096 floats for "
                "T = 1 .. 2048) over N GPUs, op by op and in CUDA graphs, beside the ring floor "
                "from the peer bandwidth measured now; --tensor-parallel N: over N GPUs "
                "(default: all)");
  cmd->add_flag("--mask", args->mask,
                "With -m: time constrained decoding's host work per token (the grammar's token "
                "mask, then advancing it) with the model's vocabulary over random generations of "
                "a nested JSON schema (or --schema FILE): median and p99, cold and warm");
  cmd->add_option("--schema", args->schema, "With --mask: a JSON schema file");
  cmd->add_option("--generations", args->generations, "With --mask: random generations (40)")
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--device", args->m.device, "auto|cpu|cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--json", args->m.json, "Also write the results as JSON to this file");
  cmd->add_option("-m,--model", args->m.path, "GGUF model: pp/tg throughput beside the floors");
  cmd->add_option("-p,--pp", args->m.pp,
                  "Prompt tokens of the prefill test (0: skip); with --batched: per sequence");
  cmd->add_option("-n,--tg", args->m.tg,
                  "Generated tokens of the decode test (0: skip); with --batched: per sequence");
  CLI::Option* reps = cmd->add_option(
      "-r,--repetitions", args->m.reps,
      "Timed repetitions (median; not --batched; --attention: 10; --allreduce: the all-reduces "
      "averaged per size, 200)");
  cmd->add_flag("--batched", args->batched,
                "Sweep batch sizes like llama-batched-bench: --seqs prompts of --pp tokens, "
                "then --tg decode steps of all sequences together");
  CLI::Option* seqs =
      cmd->add_option("--seqs", args->m.seqs,
                      "With --batched: sequence counts, e.g. 1,16,64,128; with --gemv: the "
                      "fused GEMM's activation rows")
          ->delimiter(',');
  cmd->add_option("--prefill-chunk", args->m.prefill_chunk,
                  "With --batched: most prompt tokens per prefill forward call; with --embed: "
                  "per engine step (at least --pp)");
  cmd->add_flag("--embed", args->embed,
                "With -m (an embedding model): --seqs inputs of --pp tokens embedded together "
                "through the engine, sequences/s beside the floor");
  AddModelFlags(cmd, &args->m.flags);
  CLI::Option* tp = cmd->get_option("--tensor-parallel");
  cmd->callback([args, runner, reps, tp, seqs] {
    const int attention_trials = reps->count() > 0 ? args->m.reps : 10;
    const int gemv_reps = reps->count() > 0 ? args->m.reps : 0;  // 0: the bench's default
    // --allreduce without --tensor-parallel: every GPU.
    const int allreduce_gpus = tp->count() > 0 ? args->m.flags.tensor_parallel : 0;
    const std::vector<int> gemm_rows = seqs->count() > 0 ? args->m.seqs : std::vector<int>();
    std::vector<std::pair<int64_t, int64_t>> gemv_shapes;
    for (const std::string& s : args->gemv_shapes) {
      long long n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(s.c_str(), "%lldx%lld%c", &n, &k, &tail) != 2 || n < 1 || k < 256 ||
          k % 256 != 0) {
        throw CLI::ValidationError("--gemv-shapes",
                                   "'" + s + "' is not NxK with n >= 1 and k a multiple of 256");
      }
      gemv_shapes.emplace_back(n, k);
    }
    *runner = [args, attention_trials, gemv_reps, allreduce_gpus, gemm_rows, gemv_shapes]() -> int {
      // --threads before anything is measured: the floors count the threads the ops use.
      if (args->m.flags.threads > 0) ThreadPool::SetGlobalThreads(args->m.flags.threads);
      if (args->allreduce) {
        return RunAllReduceBench(args->m.device, args->m.json, allreduce_gpus, gemv_reps);
      }
      if (args->gemv) {
        return RunGemvBench(args->m.device, args->m.json, gemv_reps, gemm_rows, gemv_shapes);
      }
      if (args->attention) return RunAttention(args->m.device, args->m.json, attention_trials);
      if (args->mask) {
        if (args->m.path.empty()) {
          std::fprintf(stderr, "forge bench: --mask needs -m MODEL (its vocabulary)\n");
          return 2;
        }
        return RunMaskBench(args->m.path, args->schema, args->generations, args->m.json);
      }
      if (!args->m.path.empty() && args->embed) return RunEmbedBench(args->m);
      if (!args->m.path.empty()) return args->batched ? RunBatched(args->m) : RunModel(args->m);
      if (!args->floor) {
        std::fprintf(stderr,
                     "forge bench: give -m MODEL, --floor, --attention, --gemv or --allreduce\n");
        return 2;
      }
      return RunFloor(args->m.device, args->m.json);
    };
  });
}

}  // namespace forge::cli
