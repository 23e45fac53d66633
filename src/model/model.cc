// Model::Open: the config, then the weights.
#include "model/model.h"

#include <utility>

namespace forge {

StatusOr<Model> Model::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return FromFile(std::move(file));
}

StatusOr<Model> Model::FromFile(std::unique_ptr<GgufFile> file) {
  Model m;
  const std::string path = file->path();
  auto config = LoadModelConfig(*file);
  if (!config.ok()) return config.status().WithContext(path);
  m.config = std::move(config).value();
  auto weights = BindModelWeights(*file, m.config);
  if (!weights.ok()) return weights.status().WithContext(path);
  m.weights = std::move(weights).value();
  m.architecture = FindArchitecture(m.config.arch);  // LoadModelConfig found it
  m.file = std::move(file);
  return m;
}

}  // namespace forge
