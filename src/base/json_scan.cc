// The bracket scans over JSON text: see json_scan.h.
#include "base/json_scan.h"

#include <algorithm>

namespace forge {

size_t JsonValueEnd(std::string_view text, size_t pos, int max_depth) {
  JsonScanner scan(text, pos);
  while (scan.Next()) {
    if (scan.opens() && scan.depth() > max_depth) return std::string_view::npos;
    if (scan.closes() && scan.depth() == 0) return scan.pos() + 1;
  }
  return std::string_view::npos;
}

int JsonNestingDepth(std::string_view text) {
  JsonScanner scan(text);
  int deepest = 0;
  while (scan.Next()) deepest = std::max(deepest, scan.depth());
  return deepest;
}

}  // namespace forge
