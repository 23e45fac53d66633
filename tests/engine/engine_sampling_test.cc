// The engine's sampling through the CPU backend's Sample op equals the host Sampler on the same
// logits (the edits built by engine/sample_rows.h reproduce the Sampler's bias, penalties and
// masks).
#include "engine_sampling_check.h"

namespace forge {
namespace {

TEST(EngineSamplingTest, SampleOpEqualsHostSampler) {
  auto backend = MakeCpuBackend();
  auto model = ModelRunner::Load(testing::TestDataPath("models/stories260K.gguf"), backend.get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  testing::ExpectEngineSamplingMatchesSampler(**model);
}

}  // namespace
}  // namespace forge
