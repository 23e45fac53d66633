// BusyWindow: the busy fraction of the last 10 s (since the start when younger), from busy
// seconds added at given times; old seconds leave the window, the result stays in [0, 1].
#include "engine/busy_window.h"

#include <gtest/gtest.h>

namespace forge {
namespace {

using std::chrono::milliseconds;
using Clock = BusyWindow::Clock;

TEST(BusyWindowTest, FractionSinceTheStartWhenYoung) {
  const Clock::time_point t = Clock::now();
  BusyWindow w(t);
  EXPECT_EQ(w.Ratio(t), 0.0);
  w.Add(t + milliseconds(500), 0.25);
  w.Add(t + milliseconds(1500), 0.25);
  EXPECT_DOUBLE_EQ(w.Ratio(t + milliseconds(2000)), 0.25);  // 0.5 s of 2 s
  EXPECT_DOUBLE_EQ(w.Ratio(t + milliseconds(1000)), 0.25);  // only what was added by then
}

TEST(BusyWindowTest, OldSecondsLeaveTheWindow) {
  const Clock::time_point t = Clock::now();
  BusyWindow w(t);
  // Busy half of every 100 ms for 20 s, then idle.
  for (int i = 1; i <= 200; ++i) w.Add(t + milliseconds(100 * i - 1), 0.05);
  EXPECT_NEAR(w.Ratio(t + milliseconds(20000)), 0.5, 0.01);
  // 5 s later half the window is idle.
  EXPECT_NEAR(w.Ratio(t + milliseconds(25000)), 0.25, 0.01);
  // 10 s later nothing of it is left.
  EXPECT_EQ(w.Ratio(t + milliseconds(30100)), 0.0);
  // A slot reused after a full turn of the ring holds only the new seconds.
  w.Add(t + milliseconds(30150), 0.1);
  EXPECT_NEAR(w.Ratio(t + milliseconds(30200)), 0.1 / 9.9, 0.002);
}

TEST(BusyWindowTest, ClampedToOne) {
  const Clock::time_point t = Clock::now();
  BusyWindow w(t);
  w.Add(t + milliseconds(100), 5.0);  // more than the wall time (device and host clocks differ)
  EXPECT_EQ(w.Ratio(t + milliseconds(200)), 1.0);
}

}  // namespace
}  // namespace forge
