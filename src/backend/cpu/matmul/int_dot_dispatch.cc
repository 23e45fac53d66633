// Choosing the integer row dot: the CPU's features read once, the active path (tests lower it).
#include <algorithm>
#include <atomic>

#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/int_dot_paths.h"

namespace forge {
namespace {

CpuIsa DetectCpuIsa() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (!avx2) return CpuIsa::kScalar;
  const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512vnni");
  return vnni ? CpuIsa::kAvx512Vnni : CpuIsa::kAvx2;
#else
  return CpuIsa::kScalar;
#endif
}

std::atomic<int>& Active() {
  static std::atomic<int> active{static_cast<int>(BestCpuIsa())};
  return active;
}

}  // namespace

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512Vnni:
      return "avx512vnni";
    default:
      return "scalar";
  }
}

CpuIsa BestCpuIsa() {
  static const CpuIsa best = DetectCpuIsa();
  return best;
}

CpuIsa ActiveCpuIsa() { return static_cast<CpuIsa>(Active().load(std::memory_order_relaxed)); }

void SetCpuIsa(CpuIsa isa) {
  const int v = std::min(static_cast<int>(isa), static_cast<int>(BestCpuIsa()));
  Active().store(v, std::memory_order_relaxed);
}

IntRowDots IntRowDotsFor(GgmlType type, CpuIsa isa) {
  // A path the CPU lacks is never returned; a path without the type takes the next one down
  // (every path computes the same bits).
  int level = std::min(static_cast<int>(isa), static_cast<int>(BestCpuIsa()));
#if defined(__x86_64__) || defined(__i386__)
  if (level >= static_cast<int>(CpuIsa::kAvx512Vnni)) {
    if (IntRowDots f = int_dot::VnniRowDots(type)) return f;
  }
  if (level >= static_cast<int>(CpuIsa::kAvx2)) {
    if (IntRowDots f = int_dot::Avx2RowDots(type)) return f;
  }
#else
  (void)level;
#endif
  return int_dot::ScalarRowDots(type);
}

}  // namespace forge
