// The cross-backend op harness on the host backends: every case of support/op_cases.h on the
// reference backend and the CPU backend (F32; its matmul also by each lower instruction-set path
// the machine runs), against each op's _ref twin on the host. The CUDA
// backend's run of the same tables is in cuda/op_harness_cuda_test.cc. The host backends take the
// cases whose reference costs at most the budgets below (this runs in CI on 2 cores, also under
// AddressSanitizer); the GPU takes every case.
#include <gtest/gtest.h>

#include <vector>

#include "backend/backend.h"
#include "backend/cpu/matmul/int_dot.h"
#include "support/op_runner.h"

namespace forge {
namespace {

using testing::OpTarget;

// Multiply-adds of a case's reference: the reference backend runs the _ref twin itself (single
// threaded), the CPU backend its own threaded ops.
constexpr int64_t kReferenceBudget = int64_t{1} << 22;
constexpr int64_t kCpuBudget = int64_t{1} << 26;
// The CPU matmul's lower instruction-set paths, forced, take the smaller cases (every path's bits
// are also checked equal to matmul_ref's in cpu/matmul_int_dot_test.cc).
// Under AddressSanitizer (10 times slower) they take the smaller cases only: the same code, its
// edges included.
#ifdef __SANITIZE_ADDRESS__
constexpr int64_t kScalarBudget = int64_t{1} << 18;
constexpr int64_t kLowerPathBudget = int64_t{1} << 20;
#else
constexpr int64_t kScalarBudget = int64_t{1} << 21;
constexpr int64_t kLowerPathBudget = int64_t{1} << 24;
#endif

class OpHarnessTest : public ::testing::Test {
 protected:
  std::vector<OpTarget> Targets() {
    OpTarget ref, cpu;
    ref.backend = ref_.get();
    ref.max_cost = kReferenceBudget;
    cpu.backend = cpu_.get();
    cpu.max_cost = kCpuBudget;
    // The CPU matmul's instruction-set paths below the best one this machine runs, forced, on the
    // block-format cases within their budgets (the highest of them also takes the other formats:
    // they have one path); the best path (the backend's own op) takes what none of them does, so
    // that a variant runs every case.
    const int best = static_cast<int>(BestCpuIsa());
    auto lower_why_not = [best](CpuIsa path, const MatmulParams& p) -> const char* {
      if (GetTypeTraits(p.w.type).block_elems == 1) {
        return static_cast<int>(path) == best - 1 ? nullptr : "F32 / F16 / BF16 weights";
      }
      const int64_t budget = path == CpuIsa::kScalar ? kScalarBudget : kLowerPathBudget;
      return p.m * p.w.rows * p.w.cols > budget ? "larger than the path's budget" : nullptr;
    };
    for (int isa = 0; isa <= best; ++isa) {
      const CpuIsa path = static_cast<CpuIsa>(isa);
      cpu.matmul.push_back(testing::OpVariant<MatmulParams>{
          std::string("cpu_") + CpuIsaName(path),
          [path, best, lower_why_not](const MatmulParams& p) -> const char* {
            if (static_cast<int>(path) < best) return lower_why_not(path, p);
            for (int lower = 0; lower < best; ++lower) {
              if (lower_why_not(static_cast<CpuIsa>(lower), p) == nullptr) {
                return "a lower path runs it (the backend's op runs this one)";
              }
            }
            return nullptr;
          },
          [path](const MatmulParams& p) {
            SetCpuIsa(path);
            Status st = matmul_cpu(p);
            SetCpuIsa(BestCpuIsa());
            return st;
          },
          nullptr});
    }
    return {ref, cpu};
  }

  std::unique_ptr<Backend> ref_ = MakeReferenceBackend(), cpu_ = MakeCpuBackend();
};

FORGE_OP_HARNESS_TESTS(OpHarnessTest)

}  // namespace
}  // namespace forge
