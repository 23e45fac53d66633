// The cross-backend op harness on the host backends: every case of support/op_cases.h on the
// reference backend and the CPU backend (F32), against each op's _ref twin on the host. The CUDA
// backend's run of the same tables is in cuda/op_harness_cuda_test.cc. The host backends take the
// cases whose reference costs at most the budgets below (this runs in CI on 2 cores, also under
// AddressSanitizer); the GPU takes every case.
#include <gtest/gtest.h>

#include <vector>

#include "backend/backend.h"
#include "support/op_runner.h"

namespace forge {
namespace {

using testing::OpTarget;

// Multiply-adds of a case's reference: the reference backend runs the _ref twin itself (single
// threaded), the CPU backend its own threaded ops.
constexpr int64_t kReferenceBudget = int64_t{1} << 22;
constexpr int64_t kCpuBudget = int64_t{1} << 26;

class OpHarnessTest : public ::testing::Test {
 protected:
  std::vector<OpTarget> Targets() {
    OpTarget ref, cpu;
    ref.backend = ref_.get();
    ref.max_cost = kReferenceBudget;
    cpu.backend = cpu_.get();
    cpu.max_cost = kCpuBudget;
    return {ref, cpu};
  }

  std::unique_ptr<Backend> ref_ = MakeReferenceBackend(), cpu_ = MakeCpuBackend();
};

FORGE_OP_HARNESS_TESTS(OpHarnessTest)

}  // namespace
}  // namespace forge
