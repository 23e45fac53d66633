// The engine on the GPU samples with the CUDA Sample op; every token and log-probability equals the
// host Sampler's on the very logits rows the engine sampled from (F32 stories260K).
#include "backend/cuda/cuda_backend.h"
#include "engine/engine_sampling_check.h"

namespace forge {
namespace {

TEST(CudaEngineSamplingTest, SampleOpEqualsHostSampler) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  auto model = ModelRunner::Load(testing::TestDataPath("models/stories260K.gguf"), gpu->get(), {},
                                 {DType::kF32});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  testing::ExpectEngineSamplingMatchesSampler(**model);
}

}  // namespace
}  // namespace forge
