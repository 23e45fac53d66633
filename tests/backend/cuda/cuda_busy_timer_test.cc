// The CUDA backend's busy timer (CUDA events around marked work): brackets are timed on the
// device without waiting for them, work outside brackets and marks made while a graph is being
// captured are not counted, a graph replayed inside a bracket is, a query of unfinished work
// leaves no error behind for the next launch, and more brackets than the ring holds still count.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr int64_t kN = int64_t{64} << 20;  // floats per buffer (256 MiB)

struct Fixture {
  std::unique_ptr<Backend> be;
  std::unique_ptr<BackendBuffer> a, b, out;
  AddParams add;
};

std::unique_ptr<Fixture> Make() {
  auto f = std::make_unique<Fixture>();
  auto be = MakeCudaBackend(0);
  EXPECT_TRUE(be.ok()) << be.status().ToString();
  if (!be.ok()) return nullptr;
  f->be = std::move(be).value();
  for (auto* buf : {&f->a, &f->b, &f->out}) {
    auto m = f->be->Alloc(kN * sizeof(float));
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return nullptr;
    *buf = std::move(m).value();
  }
  f->add = {f->a->f32(), f->b->f32(), f->out->f32(), kN};
  return f;
}

TEST(CudaBusyTimerTest, TimesBracketsOnTheDeviceWithoutWaiting) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto f = Make();
  ASSERT_TRUE(f);
  Backend& be = *f->be;
  EXPECT_EQ(be.BusySeconds(), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  be.MarkBusyBegin();
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(be.Add(f->add).ok());
  be.MarkBusyEnd();
  be.BusySeconds();  // most likely not finished: a non-blocking query
  ASSERT_TRUE(be.Add(f->add).ok()) << "a query left an error for the next launch";
  ASSERT_TRUE(be.Synchronize().ok());
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy = be.BusySeconds();
  EXPECT_GT(busy, 0.0);
  EXPECT_LE(busy, host * 1.05 + 1e-4);  // the bracket lies inside the host's span

  // Work outside brackets is not counted.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(be.Add(f->add).ok());
  ASSERT_TRUE(be.Synchronize().ok());
  EXPECT_EQ(be.BusySeconds(), busy);
}

TEST(CudaBusyTimerTest, CaptureIsNotRecordedAndReplaysInsideBracketsCount) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto f = Make();
  ASSERT_TRUE(f);
  Backend& be = *f->be;
  ASSERT_TRUE(be.BeginCapture().ok());
  be.MarkBusyBegin();  // ignored: the stream is capturing
  Status added = be.Add(f->add);
  be.MarkBusyEnd();
  auto graph = be.EndCapture();
  ASSERT_TRUE(added.ok()) << added.ToString();
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*graph)->Replay().ok());
  ASSERT_TRUE(be.Synchronize().ok());
  EXPECT_EQ(be.BusySeconds(), 0.0);

  be.MarkBusyBegin();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*graph)->Replay().ok());
  be.MarkBusyEnd();
  ASSERT_TRUE(be.Synchronize().ok());
  EXPECT_GT(be.BusySeconds(), 0.0);
}

TEST(CudaBusyTimerTest, MoreBracketsThanTheRingHoldsAllCount) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto f = Make();
  ASSERT_TRUE(f);
  Backend& be = *f->be;
  // Without a sync in between, past the ring's 64 pairs: the oldest are waited for, not lost.
  double last = 0;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 150; ++i) {
      be.MarkBusyBegin();
      ASSERT_TRUE(be.Add(f->add).ok());
      be.MarkBusyEnd();
    }
    ASSERT_TRUE(be.Synchronize().ok());
    const double busy = be.BusySeconds();
    EXPECT_GT(busy, last) << "round " << round;
    last = busy;
  }
  ASSERT_TRUE(be.Add(f->add).ok());
  ASSERT_TRUE(be.Synchronize().ok());
}

}  // namespace
}  // namespace forge
