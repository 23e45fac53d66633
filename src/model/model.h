// Model: a loaded GGUF model: the mapped file, its config and its weights bound by name over the
// mapping (host views, no copy), and the architecture whose forward runs it. Running it (weights
// on the backends, workspace, graphs, tensor-parallel ranks) is runtime/model_runner.h's.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/architecture.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace forge {

struct Model {
  std::unique_ptr<GgufFile> file;
  ModelConfig config;
  ModelWeights weights;  // views of the file's mapping
  const Architecture* architecture = nullptr;

  // Reads the config and binds the weights; errors name the file.
  static StatusOr<Model> Open(const std::string& path);
  static StatusOr<Model> FromFile(std::unique_ptr<GgufFile> file);
};

}  // namespace forge
