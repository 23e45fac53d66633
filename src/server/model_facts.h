// ModelFacts: what the status endpoint and the web page say about the served model and the
// device it runs on (filled by `forge serve`), and the device's floors, measured once on demand.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "runtime/device_floors.h"

namespace forge::server {

struct ModelFacts {
  std::string architecture;  // GGUF general.architecture: "llama", "qwen2", ...
  std::string name;          // general.name
  std::string file;          // the GGUF's path
  std::string format;        // weight types by share of the matrix bytes: "Q8_0", "Q4_K 71%, ..."
  std::string device;        // "cpu (2 threads)", "cuda", "cuda x 2 (tensor parallel)"
  std::string dtype;         // activations: "f32", "bf16", ...
  int64_t parameters = 0;    // elements of every tensor
  int64_t context = 0;       // tokens per sequence the engine serves
  int64_t training_context = 0;
  int64_t layers = 0, embedding = 0, heads = 0, kv_heads = 0, vocabulary = 0;
  // The decode floor's bytes: every weight matrix but token_embd, read once per step.
  int64_t weight_bytes_per_step = 0;
  // The prefill floor's FLOPs per token: 2 x the parameters outside token_embd.
  double flops_per_token = 0;
  // Measures the device's floors (about a second); run once, off the I/O threads. Null: none.
  std::function<StatusOr<DeviceFloors>()> measure_floors;
};

}  // namespace forge::server
