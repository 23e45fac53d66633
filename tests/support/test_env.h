// Test helpers: where the shared test data lives, and skipping GPU tests without a GPU
// (a failure instead when FORGE_REQUIRE_GPU=1) or multi-GPU tests without enough GPUs (a
// failure instead when FORGE_REQUIRE_GPUS=<n> asks for at least that many).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace forge::testing {

// $FORGE_TESTDATA, else ../shared/testdata beside the checkout.
std::string TestDataDir();
// TestDataDir()/relative; fails the current test (with where it looked) if the file is missing.
std::string TestDataPath(const std::string& relative);
bool FileExists(const std::string& path);
// A fresh temporary directory for this test (removed by the OS's tmp cleaning).
std::string TempDir();
// The forge CLI binary next to the tests ($FORGE_BIN overrides).
std::string ForgeBinary();
// True when FORGE_REQUIRE_GPU=1.
bool GpuRequired();
// Empty when a CUDA device is usable, else the reason there is none.
std::string GpuUnavailableReason();
// Usable CUDA devices (0 without the CUDA backend).
int GpuCount();
// FORGE_REQUIRE_GPUS as a number (0 when unset or not a number).
int GpusRequired();

}  // namespace forge::testing

// Skips the test when no GPU is usable; with FORGE_REQUIRE_GPU=1 that is a failure instead.
#define FORGE_REQUIRE_GPU_OR_SKIP()                                                  \
  do {                                                                               \
    std::string _why = ::forge::testing::GpuUnavailableReason();                     \
    if (!_why.empty()) {                                                             \
      if (::forge::testing::GpuRequired()) FAIL() << "FORGE_REQUIRE_GPU=1 but " << _why; \
      GTEST_SKIP() << _why;                                                          \
    }                                                                                \
  } while (0)

// Skips the test when fewer than n CUDA devices are usable; a failure instead when
// FORGE_REQUIRE_GPUS is set to a number >= n (FORGE_REQUIRE_GPU=1 alone still skips here).
#define FORGE_REQUIRE_GPUS_OR_SKIP(n)                                                           \
  do {                                                                                          \
    const int _need = (n);                                                                      \
    const int _have = ::forge::testing::GpuCount();                                             \
    if (_have < _need) {                                                                        \
      std::string _why =                                                                        \
          "needs " + std::to_string(_need) + " CUDA devices, found " + std::to_string(_have);   \
      if (_have == 0) _why += " (" + ::forge::testing::GpuUnavailableReason() + ")";            \
      if (::forge::testing::GpusRequired() >= _need) {                                          \
        FAIL() << "FORGE_REQUIRE_GPUS=" << ::forge::testing::GpusRequired() << " but " << _why; \
      }                                                                                         \
      GTEST_SKIP() << _why;                                                                     \
    }                                                                                           \
  } while (0)
