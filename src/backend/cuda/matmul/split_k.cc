// The quantized matmuls' split of k (split_k.h).
#include "backend/cuda/matmul/split_k.h"

#include <algorithm>

namespace forge::cuda {

double WaveFill(int64_t ctas, int64_t slots) {
  const int64_t waves = (ctas + slots - 1) / slots;
  return static_cast<double>(ctas) / static_cast<double>(waves * slots);
}

int SplitByFill(int max_split, int64_t slots, const std::function<int64_t(int)>& ctas) {
  int best = 1;
  double best_fill = -1;
  for (int s = 1; s <= std::max(1, max_split); s *= 2) {
    const double fill = WaveFill(ctas(s), slots);
    if (fill > best_fill + 0.02) {
      best = s;
      best_fill = fill;
    }
  }
  return best;
}

int SplitByTime(int64_t tiles, int units, int64_t slots) {
  int best = 1;
  int64_t best_cost = -1;
  for (int s = 1; s <= 8 && s <= units; s *= 2) {
    const int per = (units + s - 1) / s;
    if ((s - 1) * per >= units) continue;  // a CTA of the cluster would get no unit
    const int64_t waves = (tiles * s + slots - 1) / slots;
    const int64_t cost = waves * (per + 1);
    if (best_cost < 0 || cost < best_cost) {
      best = s;
      best_cost = cost;
    }
  }
  return best;
}

OneWaveSplit SplitInOneWave(int64_t tiles, int sbs, int64_t sms, int per_sm, int max_split,
                            bool global, const std::function<int64_t(int)>& clusters) {
  if (per_sm > 1) {
    int ns = 1;
    while (ns * 2 <= max_split && ns * 2 <= sbs && tiles * ns * 2 <= sms * per_sm) ns *= 2;
    return {ns, false};
  }
  OneWaveSplit best;
  for (int ns = std::min(max_split, sbs); ns > 1; --ns) {
    if (tiles <= clusters(ns)) {
      best.ns = ns;
      break;
    }
  }
  if (global) {
    auto per = [sbs](int ns) { return (sbs + ns - 1) / ns; };
    for (int ns = std::min(max_split, sbs); ns > best.ns; --ns) {
      if (tiles * ns > sms || per(ns) >= per(best.ns)) continue;
      while (ns > 2 && per(ns - 1) == per(ns)) --ns;  // the fewest CTAs for that many
      return {ns, true};
    }
  }
  return best;
}

}  // namespace forge::cuda
