// The host backends' default busy timer (Backend::MarkBusyBegin / MarkBusyEnd / BusySeconds):
// host wall time inside the brackets only; unpaired marks are ignored.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "backend/backend.h"

namespace forge {
namespace {

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(BusyTimerTest, CpuDefaultCountsOnlyTimeInsideBrackets) {
  for (auto make : {MakeCpuBackend, MakeReferenceBackend}) {
    std::unique_ptr<Backend> be = make();
    EXPECT_EQ(be->BusySeconds(), 0.0);
    SleepMs(20);  // before any bracket: not busy
    EXPECT_EQ(be->BusySeconds(), 0.0);

    be->MarkBusyBegin();
    SleepMs(30);
    be->MarkBusyEnd();
    const double first = be->BusySeconds();
    EXPECT_GE(first, 0.029) << be->name();

    SleepMs(30);  // between brackets: not busy
    EXPECT_EQ(be->BusySeconds(), first);

    be->MarkBusyEnd();  // unpaired: ignored
    EXPECT_EQ(be->BusySeconds(), first);

    be->MarkBusyBegin();
    SleepMs(10);
    be->MarkBusyBegin();  // nested: the bracket keeps its first begin
    SleepMs(10);
    be->MarkBusyEnd();
    const double second = be->BusySeconds() - first;
    EXPECT_GE(second, 0.019) << be->name();
  }
}

TEST(BusyTimerTest, OpenBracketIsNotCountedUntilItEnds) {
  std::unique_ptr<Backend> be = MakeCpuBackend();
  be->MarkBusyBegin();
  SleepMs(10);
  EXPECT_EQ(be->BusySeconds(), 0.0);
  be->MarkBusyEnd();
  EXPECT_GT(be->BusySeconds(), 0.0);
}

}  // namespace
}  // namespace forge
