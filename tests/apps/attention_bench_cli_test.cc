// `forge bench --attention` times CUDA kernels: on the CPU it fails with a message that says so.
#include <gtest/gtest.h>

#include "support/cli_runner.h"
#include "support/test_env.h"

namespace forge {
namespace {

TEST(AttentionBenchCliTest, CpuDeviceIsRefusedClearly) {
  const std::string dir = testing::TempDir();
  auto r = testing::RunForge("bench --attention --device cpu", dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("forge bench --attention:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace forge
