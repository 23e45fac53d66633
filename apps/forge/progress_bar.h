// A load progress bar on stderr (only when stderr is a terminal), for ModelRunner::Load.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "model/model_weights.h"

namespace forge::cli {

inline LoadProgress StderrProgressBar(const char* what) {
  if (!::isatty(STDERR_FILENO)) return {};
  return [what, last = -1](int64_t done, int64_t total) mutable {
    const int pct = total > 0 ? static_cast<int>(100 * done / total) : 100;
    if (pct == last) return;
    last = pct;
    const int width = 40, filled = pct * width / 100;
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.2f GiB", what, filled,
                 "========================================", width - filled, "", pct,
                 done / 1073741824.0);
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace forge::cli
