// The first CUDA kernel against its CPU twin: odd sizes, aliasing, poisoned outputs.
#include "backend/cuda/add/add_cuda.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cuda/device.h"
#include "support/test_env.h"

namespace forge {
namespace {

TEST(AddCudaTest, MatchesReference) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int64_t n : {1, 5, 7, 13, 1000, 1 << 20, (1 << 24) + 3}) {
    std::vector<float> a(n), b(n), ref(n), got(n + 4, std::nanf(""));
    for (auto& x : a) x = normal(rng);
    for (auto& x : b) x = normal(rng);
    ASSERT_TRUE(add_ref({a.data(), b.data(), ref.data(), n}).ok());
    size_t bytes = n * sizeof(float);
    auto da = cuda::DeviceAlloc(bytes), db = cuda::DeviceAlloc(bytes);
    auto dout = cuda::DeviceAlloc(bytes + 16);
    ASSERT_TRUE(da.ok() && db.ok() && dout.ok());
    ASSERT_TRUE(cuda::CopyToDevice(*da, a.data(), bytes).ok());
    ASSERT_TRUE(cuda::CopyToDevice(*db, b.data(), bytes).ok());
    ASSERT_TRUE(cuda::CopyToDevice(*dout, got.data(), bytes + 16).ok());  // poison + guard
    AddParams p{static_cast<float*>(*da), static_cast<float*>(*db), static_cast<float*>(*dout), n};
    ASSERT_TRUE(cuda::add_cuda(p).ok());
    ASSERT_TRUE(cuda::DeviceSynchronize().ok());
    ASSERT_TRUE(cuda::CopyToHost(got.data(), *dout, bytes + 16).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], ref[i]) << "n=" << n << " i=" << i;
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(got[n + i])) << "guard overwritten";
    // In place: out aliases a.
    p.out = static_cast<float*>(*da);
    ASSERT_TRUE(cuda::add_cuda(p).ok());
    ASSERT_TRUE(cuda::CopyToHost(got.data(), *da, bytes).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], ref[i]);
    cuda::DeviceFree(*da);
    cuda::DeviceFree(*db);
    cuda::DeviceFree(*dout);
  }
}

TEST(AddCudaTest, DeviceIsHopper) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto info = cuda::GetDeviceInfo(0);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->cc_major, 9) << info->name;
  EXPECT_GT(info->sm_count, 0);
}

}  // namespace
}  // namespace forge
