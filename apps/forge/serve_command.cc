// forge serve -m MODEL.gguf [--host H --port P --api-key K ...]: the OpenAI-compatible HTTP server
// (src/server) over one engine. It listens before the model loads (/health: 503, then 200) and
// shuts down gracefully on SIGINT or SIGTERM.
#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>

#include "base/thread_pool.h"
#include "commands.h"
#include "engine/engine.h"
#include "model_flags.h"
#include "quant/type_table.h"
#include "runtime/backends.h"
#include "runtime/device_floors.h"
#include "server/server.h"
#include "tokenizer/chat_template.h"

namespace forge::cli {
namespace {

constexpr const char* kChatMl =
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct Args {
  std::string model, device = "auto", alias, port_file, api_key_file, chat_template_file;
  std::vector<std::string> served_names;
  double keep_alive_s = 30, request_timeout_s = 120;
  server::ServerOptions server;
  int64_t ctx = 0;
  // 0: by device. A GPU step costs about the same for one sequence as for a hundred (it reads
  // every weight once either way), so a GPU serves up to 256 at once (the largest decode graph)
  // with 2048-token steps; a CPU step's cost grows with its rows: 16 and 512.
  int parallel = 0, batch_tokens = 0, step_delay_ms = 0, load_delay_ms = 0;
  int64_t kv_mb = 0;  // 0: planned from gpu_memory_fraction on a GPU, 1024 MiB on the CPU
  double gpu_memory_fraction = 0.9;
  ModelFlags model_flags;
};

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "forge serve: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

// The key from --api-key-file: its first line, without the line end (a key on the command line
// is visible to every user in /proc/PID/cmdline; a file can be readable by its owner alone).
Status ReadApiKey(const std::string& path, std::string* key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("--api-key-file " + path + ": cannot be read");
  char buf[4096];
  in.read(buf, sizeof buf);
  std::string text(buf, static_cast<size_t>(in.gcount()));
  if (!in.eof() && in.gcount() == sizeof buf) {
    return InvalidArgumentError("--api-key-file " + path + ": longer than 4096 bytes");
  }
  text = text.substr(0, text.find_first_of("\r\n"));
  if (text.empty())
    return InvalidArgumentError("--api-key-file " + path + ": the first line is empty");
  *key = text;
  return Status::Ok();
}

// The weight types by their share of the tensor bytes: "Q8_0 97%, F32 3%" (one type: its name).
std::string WeightFormat(const GgufFile& file) {
  std::map<std::string, int64_t> bytes;
  int64_t total = 0;
  for (const GgufTensorInfo& t : file.tensors()) {
    bytes[std::string(TypeName(t.type))] += t.n_bytes;
    total += t.n_bytes;
  }
  std::vector<std::pair<int64_t, std::string>> by_share;
  for (const auto& [type, b] : bytes) by_share.emplace_back(b, type);
  std::sort(by_share.rbegin(), by_share.rend());
  if (by_share.size() == 1) return by_share[0].second;
  std::string out;
  for (const auto& [b, type] : by_share) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.0f%%", out.empty() ? "" : ", ", type.c_str(),
                  total > 0 ? 100.0 * b / total : 0.0);
    out += buf;
  }
  return out;
}

// What /status and the web page show about the model and its device.
server::ModelFacts FactsOf(const std::string& path, ModelRunner& model, const Engine& engine) {
  server::ModelFacts f;
  const ModelConfig& c = model.config();
  const GgufFile& file = model.file();
  f.architecture = c.arch;
  f.name = c.name;
  f.file = path;
  f.format = WeightFormat(file);
  f.dtype = DTypeName(model.dtype());
  for (const GgufTensorInfo& t : file.tensors()) f.parameters += t.n_elements;
  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  const int64_t embd_params = embd ? embd->n_elements : 0;
  f.flops_per_token = 2.0 * static_cast<double>(f.parameters - embd_params);
  f.weight_bytes_per_step = WeightMatrixBytes(model.host_weights(), /*with_token_embd=*/false);
  f.context = engine.ctx_size();
  f.training_context = c.n_ctx_train;
  f.layers = c.n_layer;
  f.embedding = c.n_embd;
  f.heads = c.n_head;
  f.kv_heads = c.n_head_kv;
  f.vocabulary = c.n_vocab;
  Backend& backend = model.backend();
  f.device = backend.name();
  if (backend.name() == "cpu") {
    f.device += " (" + std::to_string(ThreadPool::DefaultThreads()) + " threads)";
  }
  if (model.tensor_parallel() > 1) {
    f.device += " x " + std::to_string(model.tensor_parallel()) + " (tensor parallel)";
  }
  f.measure_floors = [&backend] { return MeasureDeviceFloors(backend); };
  return f;
}

int Serve(Args& a) {
  // Request bodies (up to 16 MB) and their parsed JSON are large and short-lived. A fixed mmap
  // threshold keeps every allocation past 1 MB in its own mapping, returned to the system when
  // freed; glibc's default raises the threshold after the first such free, after which large
  // bodies land in the heap and the process keeps their memory.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  if (!a.api_key_file.empty()) {
    if (!a.server.api_key.empty()) {
      return Fail("options", InvalidArgumentError("give --api-key or --api-key-file, not both"));
    }
    if (Status s = ReadApiKey(a.api_key_file, &a.server.api_key); !s.ok())
      return Fail("options", s);
  }
  a.server.connection.keep_alive_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(a.keep_alive_s * 1000));
  a.server.connection.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(a.request_timeout_s * 1000));
  // Signals are taken by sigwait below; every thread started from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Owned so it can be destroyed (with its I/O context and every session) before the engine.
  auto srv_owner = std::make_unique<server::Server>(a.server);
  server::Server& srv = *srv_owner;
  if (Status s = srv.Start(); !s.ok()) return Fail("listen", s);
  std::fprintf(stderr, "forge serve: listening on http://%s:%u (loading %s)\n",
               a.server.host.c_str(), srv.port(), a.model.c_str());
  if (!a.port_file.empty()) {
    std::ofstream(a.port_file + ".tmp") << srv.port() << "\n";
    std::filesystem::rename(a.port_file + ".tmp", a.port_file);
  }
  // --debug-load-delay-ms: stay in the loading state (tests watch /health answer 503). A signal
  // meanwhile ends the wait and the server exits cleanly.
  if (a.load_delay_ms > 0) {
    const timespec delay{a.load_delay_ms / 1000, (a.load_delay_ms % 1000) * 1000000L};
    if (int sig = sigtimedwait(&signals, nullptr, &delay); sig > 0) {
      std::fprintf(stderr, "forge serve: signal %d while loading: shutting down\n", sig);
      srv.Shutdown();
      return 0;
    }
  }
  auto loaded = LoadModelOn(a.model, a.device, a.model_flags);
  if (!loaded.ok()) return Fail("model", loaded.status());
  std::unique_ptr<ModelRunner>* model = &(*loaded)->model;
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  if (!tokenizer.ok()) return Fail("tokenizer", tokenizer.status());
  auto source_or = (*model)->file().GetStringOr("tokenizer.chat_template", "");
  if (!source_or.ok()) return Fail("chat template", source_or.status());
  std::string source = *source_or;
  if (!a.chat_template_file.empty()) {  // --chat-template: the file's template instead
    std::ifstream in(a.chat_template_file, std::ios::binary);
    if (!in) {
      return Fail("chat template",
                  NotFoundError("--chat-template " + a.chat_template_file + ": cannot be read"));
    }
    source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (source.empty()) {
      return Fail("chat template",
                  InvalidArgumentError("--chat-template " + a.chat_template_file + " is empty"));
    }
  }
  if (source.empty()) {
    // (An embedding model answers no chat: nothing to say about its template.)
    if ((*model)->config().pooling == PoolingType::kNone) {
      std::fprintf(stderr, "forge serve: the model has no chat template; using ChatML\n");
    }
    source = kChatMl;
  }
  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return Fail("chat template", tmpl.status());

  const bool gpu = HasDeviceMemory((*model)->backend());
  const int parallel = a.parallel > 0 ? a.parallel : gpu ? 256 : 16;
  const int batch_tokens = a.batch_tokens > 0 ? a.batch_tokens : gpu ? 2048 : 512;
  EngineOptions opt;
  opt.ctx_size = a.ctx;
  opt.max_num_seqs = parallel;
  opt.max_num_batched_tokens = std::max(batch_tokens, parallel);
  opt.kv_cache_bytes = KvCacheBytes(a.kv_mb, (*model)->backend());
  opt.gpu_memory_fraction = a.gpu_memory_fraction;
  opt.step_delay = std::chrono::milliseconds(a.step_delay_ms);
  auto engine = Engine::Create(**model, tokenizer->get(), opt);
  if (!engine.ok()) return Fail("engine", engine.status());
  (*engine)->Start();

  std::string name = a.alias.empty() ? std::filesystem::path(a.model).stem().string() : a.alias;
  std::vector<std::string> aliases;
  if (!a.served_names.empty()) {  // the first is the name; the rest are answered to as well
    name = a.served_names[0];
    aliases.assign(a.served_names.begin() + 1, a.served_names.end());
  }
  server::ServedModel served{name, aliases, engine->get(), tokenizer->get(), *tmpl, {}};
  const Vocab& vocab = (*tokenizer)->vocab();
  served.template_options.add_generation_prompt = true;
  // A template that writes "<think>" blocks belongs to a model that reasons before answering.
  served.reasoning = source.find("</think>") != std::string::npos;
  served.tool_format = server::DetectToolCallFormat(source);
  served.facts = FactsOf(a.model, **model, **engine);
  if (vocab.Valid(vocab.bos)) {
    served.template_options.bos_token = (*tokenizer)->TokenToPiece(vocab.bos, true);
  }
  if (vocab.Valid(vocab.eos)) {
    served.template_options.eos_token = (*tokenizer)->TokenToPiece(vocab.eos, true);
  }
  srv.SetModel(&served);
  std::string kind;
  if ((*engine)->embeds()) {
    kind = " (embeddings of " + std::to_string((*engine)->embedding_dim()) + " values, inputs of " +
           std::to_string((*engine)->max_embed_tokens()) + " tokens at most)";
  }
  std::fprintf(stderr,
               "forge serve: ready: model '%s'%s, context %lld, %d sequences, %d tokens a step\n",
               served.name.c_str(), kind.c_str(), static_cast<long long>((*engine)->ctx_size()),
               parallel, opt.max_num_batched_tokens);

  const auto ready = std::chrono::steady_clock::now();
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "forge serve: signal %d: shutting down\n", sig);
  srv.Shutdown();
  (*engine)->Stop();
  const EngineStats st = (*engine)->stats();
  const double up = std::chrono::duration<double>(std::chrono::steady_clock::now() - ready).count();
  std::fprintf(stderr,
               "forge serve: %lld requests, %lld steps, %lld prompt + %lld generated tokens; "
               "device busy %.2f s of %.2f s served (%.1f%%)\n",
               static_cast<long long>(st.requests_finished), static_cast<long long>(st.steps),
               static_cast<long long>(st.prompt_tokens),
               static_cast<long long>(st.generation_tokens), st.device_busy_seconds, up,
               up > 0 ? 100.0 * st.device_busy_seconds / up : 0.0);
  // Sessions and queued I/O handlers may still hold request state that refers to the engine:
  // they go first, while the engine, model and tokenizer still exist.
  srv_owner.reset();
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, CommandRunner* runner) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  AddModelAndDevice(cmd, &a->model, &a->device);
  cmd->add_option("--host", a->server.host, "Address to listen on");
  cmd->add_option("--port", a->server.port, "Port (0: any free port)");
  cmd->add_option("--api-key", a->server.api_key,
                  "Require Authorization: Bearer KEY (visible to other users in the process "
                  "list: prefer --api-key-file)");
  cmd->add_option("--api-key-file", a->api_key_file,
                  "Require Authorization: Bearer KEY, KEY being the file's first line");
  cmd->add_option("-c,--ctx-size", a->ctx, "Context size (0: the model's)");
  cmd->add_option("--max-queue", a->server.max_queue,
                  "Requests that may wait beyond --parallel running ones; then 429");
  cmd->add_option("--parallel", a->parallel,
                  "Most sequences running at once (0: 256 on a GPU, 16 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-tokens", a->batch_tokens,
                  "Most tokens per engine step (0: 2048 on a GPU, 512 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-cache-mb", a->kv_mb,
                  "KV cache budget in MiB (0: on a GPU, planned from --gpu-memory-fraction; on "
                  "the CPU, 1024)");
  cmd->add_option("--gpu-memory-fraction", a->gpu_memory_fraction,
                  "Fraction of the GPU's memory Forge may use in all (weights, workspace, KV "
                  "cache), in (0, 1]");
  AddModelFlags(cmd, &a->model_flags);
  cmd->add_option("--http-threads", a->server.threads, "HTTP I/O threads")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--http-workers", a->server.workers,
                  "Threads that parse request bodies, render templates and tokenize")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-connections", a->server.max_connections,
                  "Open connections at most; past it a new one gets 503")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--keep-alive-timeout", a->keep_alive_s,
                  "Seconds an idle connection is kept open between requests")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--request-timeout", a->request_timeout_s,
                  "Seconds a client may take to send one request (408 past it)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--default-max-tokens", a->server.default_max_tokens,
                  "max_tokens of requests that give none (capped by the context)");
  cmd->add_option("--alias", a->alias, "Model id in the API (default: the file's name)");
  cmd->add_option("--served-model-name", a->served_names,
                  "Model ids the API answers to (the first is the one it reports)")
      ->excludes("--alias");
  cmd->add_option("--chat-template", a->chat_template_file,
                  "A Jinja chat template file, used instead of the model's");
  cmd->add_option("--cors-origins", a->server.cors_origins,
                  "Origins whose pages may call the API from a browser ('*': any); off by "
                  "default");
  cmd->add_option("--port-file", a->port_file, "Write the bound port here")->group("");
  cmd->add_option("--debug-step-delay-ms", a->step_delay_ms, "Sleep after each step")->group("");
  cmd->add_option("--debug-load-delay-ms", a->load_delay_ms, "Sleep before loading the model")
      ->group("");
  cmd->callback([a, runner] { *runner = [a]() -> int { return Serve(*a); }; });
}

}  // namespace forge::cli
