// Constrained decoding through the engine on the CUDA backend: the same checks as the CPU's
// (engine/engine_grammar_check.h) with the mask applied by the Sample kernel; the GPU machine has
// no Debian python packages, so the replay against the host Sampler is the oracle there.
#include "backend/cuda/cuda_backend.h"
#include "engine/engine_grammar_check.h"

namespace forge {
namespace {

TEST(CudaEngineGrammarTest, ConstrainedSamplesFollowTheirGrammars) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto model = ModelRunner::Load(testing::TestDataPath("models/stories260K.gguf"), backend->get(),
                                 {}, {DType::kF32});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  testing::ExpectConstrainedGeneration(**model, **tokenizer, /*batch_invariant=*/false,
                                       /*python_oracles=*/false);
}

}  // namespace
}  // namespace forge
