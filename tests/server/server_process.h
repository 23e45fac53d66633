// Test helpers (header-only) for the HTTP server: a `forge serve` child process on a free
// loopback port, and HTTP requests through the curl command-line tool.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/test_env.h"

namespace forge::testing {

struct HttpResult {
  int status = 0;    // HTTP status; 0 when curl failed to connect
  std::string body;  // the response body
  std::string headers;
};

class ServerProcess {
 public:
  enum class Wait { kHealthy, kListening };
  // Starts `forge serve -m <model> --device <device> --port 0 <extra_args>` (model: empty for
  // stories260K) and waits until GET /health answers 200 (kHealthy) or only until the port is
  // known (kListening: the model may still be loading). A failure to come up is a test failure
  // and leaves ok() false.
  explicit ServerProcess(const std::string& extra_args, Wait wait = Wait::kHealthy,
                         const std::string& device = "cpu", const std::string& model = "");
  ~ServerProcess();  // SIGTERM, then waits for the exit
  bool ok() const { return port_ > 0 && (healthy_ || wait_ == Wait::kListening); }
  // Waits until GET /health answers 200; false (and a test failure) after `seconds`.
  bool WaitHealthy(int seconds = 30);
  bool alive();  // the process has not exited
  int port() const { return port_; }
  std::string url(const std::string& path) const;
  // Sends SIGTERM and returns the exit status (-1 when it did not exit within 10 s).
  int Terminate();
  std::string log() const;  // what the server wrote to stderr

 private:
  // Polls until the port file is written and, when `healthy`, /health answers 200.
  bool WaitFor(bool healthy, int seconds);

  pid_t pid_ = -1;
  int port_ = 0;
  bool healthy_ = false;
  Wait wait_;
  std::string dir_;
};

// A fixture with its own server for each test, started with the derived fixture's arguments.
class ServerFixture : public ::testing::Test {
 protected:
  explicit ServerFixture(const std::string& extra_args) : server_(extra_args) {}
  void SetUp() override { ASSERT_TRUE(server_.ok()); }
  ServerProcess server_;
};

// The text `forge run --device cpu --temp 0` prints for n tokens after prompt (stories260K).
std::string ForgeRunGreedy(const std::string& prompt, int n);

// The data: payloads of a server-sent-events body, in order ("[DONE]" included).
std::vector<std::string> SseEvents(const std::string& body);
// The payloads that are JSON objects (the chunks of a streamed answer), parsed, in order.
std::vector<nlohmann::json> SseChunks(const std::string& body);
// curl -s <args> against url; body (if not empty) is POSTed as the request body.
HttpResult Http(const std::string& method, const std::string& url, const std::string& body = "",
                const std::string& extra_curl_args = "");
// The value of a sample line "name{labels} value" (labels as written, may be empty) in a
// Prometheus text body; -1 when absent.
double MetricValue(const std::string& metrics, const std::string& name_and_labels);

// Definitions.
inline std::string ForgeRunGreedy(const std::string& prompt, int n) {
  const std::string cmd = ForgeBinary() + " run -m " + TestDataPath("models/stories260K.gguf") +
                          " --device cpu --temp 0 -n " + std::to_string(n) + " -p '" + prompt +
                          "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  pclose(p);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A fresh directory of its own (TempDir() empties the test's directory on every call).
inline std::string OwnTempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/forge-serve-XXXXXX";
  return mkdtemp(tmpl.data()) ? tmpl : std::string("/tmp");
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline ServerProcess::ServerProcess(const std::string& extra_args, Wait wait,
                                    const std::string& device, const std::string& model)
    : wait_(wait) {
  dir_ = OwnTempDir();
  const std::string port_file = dir_ + "/port";
  const std::string cmd = "exec " + ForgeBinary() + " serve -m " +
                          (model.empty() ? TestDataPath("models/stories260K.gguf") : model) +
                          " --device " + device +
                          " --host 127.0.0.1 --port 0 --port-file " + port_file + " " + extra_args +
                          " 2>" + dir_ + "/serve.log";
  pid_ = fork();
  if (pid_ == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  WaitFor(wait == Wait::kHealthy, 30);
}

inline bool ServerProcess::WaitHealthy(int seconds) { return WaitFor(true, seconds); }

inline bool ServerProcess::WaitFor(bool healthy, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
    if (port_ == 0) {
      std::ifstream in(dir_ + "/port");
      in >> port_;
    }
    if (port_ > 0 && !healthy) return true;
    if (port_ > 0 && Http("GET", url("/health")).status == 200) {
      healthy_ = true;
      return true;
    }
    if (!alive()) {
      ADD_FAILURE() << "forge serve exited: " << log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "forge serve did not " << (healthy ? "become healthy" : "listen") << ": "
                << log();
  return false;
}

inline bool ServerProcess::alive() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  pid_ = -1;
  return false;
}

inline ServerProcess::~ServerProcess() { Terminate(); }

inline int ServerProcess::Terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 1000; ++i) {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (code != 0) ADD_FAILURE() << "forge serve exit " << code << ": " << log();
      return code;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return -1;
}

inline std::string ServerProcess::log() const { return ReadFile(dir_ + "/serve.log"); }

inline std::string ServerProcess::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

inline HttpResult Http(const std::string& method, const std::string& url, const std::string& body,
                       const std::string& extra_curl_args) {
  static const std::string dir = OwnTempDir();
  static int counter = 0;
  const std::string base = dir + "/http" + std::to_string(counter++);
  std::string cmd = "curl -sS -X " + method + " -o " + base + ".body -D " + base +
                    ".head -w '%{http_code}' " + extra_curl_args;
  if (!body.empty()) {
    std::ofstream(base + ".req", std::ios::binary) << body;
    cmd += " -H 'Content-Type: application/json' --data-binary @" + base + ".req";
  }
  cmd += " '" + url + "'";
  HttpResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[64] = {0};
  const size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  r.status = std::atoi(std::string(buf, n).c_str());
  r.body = ReadFile(base + ".body");
  r.headers = ReadFile(base + ".head");
  return r;
}

inline std::vector<std::string> SseEvents(const std::string& body) {
  std::vector<std::string> events;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: ", 0) == 0) events.push_back(line.substr(6));
  }
  return events;
}

inline std::vector<nlohmann::json> SseChunks(const std::string& body) {
  std::vector<nlohmann::json> chunks;
  for (const std::string& e : SseEvents(body)) {
    if (e.rfind('{', 0) == 0) chunks.push_back(nlohmann::json::parse(e));
  }
  return chunks;
}

inline double MetricValue(const std::string& metrics, const std::string& name_and_labels) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name_and_labels + " ", 0) == 0) {
      return std::stod(line.substr(name_and_labels.size() + 1));
    }
  }
  return -1;
}

}  // namespace forge::testing
