// FindWebAsset: a lookup by name over the embedded files.
#include "server/web_assets.h"

namespace forge::server {

const WebAsset* FindWebAsset(std::string_view name) {
  for (const WebAsset& a : WebAssets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace forge::server
