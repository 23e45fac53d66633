// The CUDA backend's Copy2D against a host loop, and its memory limit (MakeCudaBackend's
// memory_limit_bytes): what MemoryInfo reports and which allocations it refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(CudaCopy2DTest, MatchesHostLoop) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  struct Case {
    size_t width, rows, src_pitch, dst_pitch, src_off, dst_off;
  };
  const Case cases[] = {
      {16, 8, 64, 32, 0, 0},       {3, 5, 7, 11, 1, 2},
      {4096, 1, 4096, 4096, 0, 0}, {1000, 37, 4096, 1000, 12, 0},
      {24, 300, 96, 48, 24, 8},    {10, 0, 10, 10, 0, 0},
      {0, 4, 8, 8, 0, 0},
  };
  std::mt19937 rng(5);
  for (const Case& c : cases) {
    SCOPED_TRACE("width " + std::to_string(c.width) + " rows " + std::to_string(c.rows) +
                 " pitches " + std::to_string(c.src_pitch) + "/" + std::to_string(c.dst_pitch));
    const size_t src_bytes = c.src_off + c.rows * c.src_pitch + 64;
    const size_t dst_bytes = c.dst_off + c.rows * c.dst_pitch + 64;
    std::vector<uint8_t> src(src_bytes), dst(dst_bytes);
    for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
    for (uint8_t& b : dst) b = static_cast<uint8_t>(rng());
    auto dsrc = be.Alloc(src_bytes).value();
    auto ddst = be.Alloc(dst_bytes).value();
    ASSERT_TRUE(be.Upload(dsrc->data(), src.data(), src_bytes).ok());
    ASSERT_TRUE(be.Upload(ddst->data(), dst.data(), dst_bytes).ok());
    const Status st =
        be.Copy2D(static_cast<char*>(ddst->data()) + c.dst_off, c.dst_pitch,
                  static_cast<const char*>(dsrc->data()) + c.src_off, c.src_pitch, c.width, c.rows);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t r = 0; r < c.rows; ++r) {
      std::memcpy(dst.data() + c.dst_off + r * c.dst_pitch,
                  src.data() + c.src_off + r * c.src_pitch, c.width);
    }
    std::vector<uint8_t> got(dst_bytes);
    ASSERT_TRUE(be.Synchronize().ok());
    ASSERT_TRUE(be.Download(got.data(), ddst->data(), dst_bytes).ok());
    EXPECT_TRUE(got == dst);
  }
}

// The backend's own workspaces (cuBLAS, attention, dequantization scratch) count against the
// limit too, so the limit is larger than the allocations the test makes.
TEST(CudaMemoryLimitTest, AllocAndMemoryInfoHonourLimit) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const int64_t limit = 512 * kMiB;
  auto backend = MakeCudaBackend(0, limit);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  EXPECT_EQ(be.name(), "cuda");
  int64_t free0 = 0, total = 0;
  be.MemoryInfo(&free0, &total);
  EXPECT_EQ(total, limit);
  EXPECT_GT(free0, 100 * kMiB);
  EXPECT_LT(free0, limit);  // the workspaces are in use
  {
    auto too_big = be.Alloc(static_cast<size_t>(free0 + kMiB));
    ASSERT_FALSE(too_big.ok());
    EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
    const std::string& m = too_big.status().message();
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
    EXPECT_NE(m.find("--gpu-memory-limit of 512.0 MiB"), std::string::npos) << m;
    auto way_too_big = be.Alloc(static_cast<size_t>(600 * kMiB));
    EXPECT_EQ(way_too_big.status().code(), StatusCode::kResourceExhausted);
  }
  {
    auto buf = be.Alloc(static_cast<size_t>(100 * kMiB));
    ASSERT_TRUE(buf.ok()) << buf.status().ToString();
    int64_t free1 = 0;
    be.MemoryInfo(&free1, &total);
    EXPECT_LE(free1, free0 - 100 * kMiB);
    EXPECT_EQ(total, limit);
    // One byte more than the room left is refused.
    auto rest_plus = be.Alloc(static_cast<size_t>(free1 + 1));
    EXPECT_EQ(rest_plus.status().code(), StatusCode::kResourceExhausted);
  }
  int64_t free2 = 0;
  be.MemoryInfo(&free2, &total);
  EXPECT_EQ(free2, free0);  // freeing gave the bytes back
}

TEST(CudaMemoryLimitTest, NoLimitReportsTheDevice) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend(0);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  int64_t free_b = 0, total = 0;
  (*backend)->MemoryInfo(&free_b, &total);
  auto info = cuda::GetDeviceInfo(0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(total, info->total_memory);
  EXPECT_GT(free_b, 0);
}

TEST(CudaMemoryLimitTest, BadDeviceOrLimitIsRefused) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto bad = MakeCudaBackend(cuda::DeviceCount());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
  auto negative = MakeCudaBackend(0, -1);
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace forge
