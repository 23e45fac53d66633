// Engine memory planning: gpu_memory_fraction is checked on every backend (a CPU test), and on a
// GPU an unplanned pool is sized from the device's free memory after the workspace is reserved:
// capped by max_num_seqs full contexts, refused with the numbers when one context cannot fit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/engine.h"
#include "modelgen/model_maker.h"
#include "runtime/backends.h"
#include "support/test_env.h"

namespace forge {
namespace {

std::string TinyModel() {
  static const std::string path = [] {
    auto spec = ModelPreset("tiny");
    EXPECT_TRUE(spec.ok());
    spec->threads = 1;
    std::string p = testing::TempDir() + "/tiny-memory-plan.gguf";
    auto made = MakeModel(*spec, p);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return p;
  }();
  return path;
}

EngineOptions SmallOptions() {
  EngineOptions o;
  o.ctx_size = 256;
  o.max_num_seqs = 4;
  o.max_num_batched_tokens = 64;
  o.seed_source = 1;
  return o;
}

TEST(EngineMemoryPlanTest, FractionOutsideZeroOneIsRefused) {
  auto backend = MakeCpuBackend();
  auto model = ModelRunner::Load(TinyModel(), backend.get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (double f : {0.0, -0.5, 1.01, 2.0, std::numeric_limits<double>::quiet_NaN()}) {
    EngineOptions o = SmallOptions();
    o.gpu_memory_fraction = f;
    auto e = Engine::Create(**model, nullptr, o);
    ASSERT_FALSE(e.ok()) << f;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << f;
    EXPECT_NE(e.status().message().find("gpu_memory_fraction="), std::string::npos)
        << e.status().message();
    EXPECT_NE(e.status().message().find("(0, 1]"), std::string::npos) << e.status().message();
  }
  for (double f : {1e-3, 0.5, 1.0}) {
    EngineOptions o = SmallOptions();
    o.gpu_memory_fraction = f;
    auto e = Engine::Create(**model, nullptr, o);
    ASSERT_TRUE(e.ok()) << f << ": " << e.status().ToString();
    // The CPU reports no memory: the pool is max_num_seqs full contexts, as before.
    EXPECT_EQ((*e)->num_kv_blocks(), 4 * 256 / 16);
  }
}

TEST(EngineMemoryPlanTest, GpuPoolIsPlannedFromFreeMemory) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = CreateBackend("cuda");
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto model = ModelRunner::Load(TinyModel(), backend->get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  int64_t free_bytes = 0, total_bytes = 0;
  (*backend)->MemoryInfo(&free_bytes, &total_bytes);
  ASSERT_GT(total_bytes, 0);

  // The tiny model's contexts are small: the budget holds all of them, so the cap applies.
  EngineOptions o = SmallOptions();
  auto e = Engine::Create(**model, nullptr, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->num_kv_blocks(), 4 * 256 / 16);
  e->reset();

  // A fraction below what is already in use (the CUDA context alone) leaves no room.
  const double used = double(total_bytes - free_bytes) / double(total_bytes);
  o.gpu_memory_fraction = used / 4;
  auto refused = Engine::Create(**model, nullptr, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  for (const char* part : {"MiB free of", "gpu_memory_fraction=", "one context of 256 tokens"}) {
    EXPECT_NE(refused.status().message().find(part), std::string::npos)
        << refused.status().message();
  }

  // An explicit byte budget bypasses the plan.
  o.kv_cache_bytes = int64_t{1} << 20;
  auto capped = Engine::Create(**model, nullptr, o);
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
}

}  // namespace
}  // namespace forge
