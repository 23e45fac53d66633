// The web page's files (src/server/web/), embedded in the binary at build time by
// cmake/EmbedWebAssets.cmake: nothing is read from disk or fetched at run time.
#pragma once

#include <span>
#include <string_view>

namespace forge::server {

struct WebAsset {
  std::string_view name;          // the file's name: "index.html", "app.js", ...
  std::string_view content_type;  // from its extension
  std::string_view body;
};

// Every embedded file (the generated web_assets_data.cc).
std::span<const WebAsset> WebAssets();
// The file of that name; null when there is none.
const WebAsset* FindWebAsset(std::string_view name);

}  // namespace forge::server
