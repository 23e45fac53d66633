// Test environment helpers.
#include "support/test_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/device.h"
#endif

namespace forge::testing {

std::string TestDataDir() {
  const char* env = std::getenv("FORGE_TESTDATA");
  if (env != nullptr && *env) return env;
  return FORGE_DEFAULT_TESTDATA;
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string TestDataPath(const std::string& relative) {
  std::string path = TestDataDir() + "/" + relative;
  EXPECT_TRUE(FileExists(path)) << "test data not found: " << path
                                << " (set FORGE_TESTDATA to the shared/testdata folder)";
  return path;
}

std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "forge";
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  auto dir = std::filesystem::temp_directory_path() /
             ("forge-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string ForgeBinary() {
  const char* env = std::getenv("FORGE_BIN");
  if (env != nullptr && *env) return env;
  const char* build = std::getenv("FORGE_BUILD_DIR");
  if (build != nullptr && *build) return std::string(build) + "/apps/forge/forge";
  // Default: the test binary sits in <build>/tests.
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path().parent_path() / "apps/forge/forge").string();
}

bool GpuRequired() {
  const char* env = std::getenv("FORGE_REQUIRE_GPU");
  return env != nullptr && std::string(env) == "1";
}

int GpuCount() {
#ifdef FORGE_HAVE_CUDA
  return forge::cuda::DeviceCount();
#else
  return 0;
#endif
}

int GpusRequired() {
  const char* env = std::getenv("FORGE_REQUIRE_GPUS");
  if (env == nullptr || *env == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  return end != env && *end == '\0' && n > 0 ? static_cast<int>(n) : 0;
}

std::string GpuUnavailableReason() {
#ifdef FORGE_HAVE_CUDA
  if (forge::cuda::DeviceCount() > 0) return "";
  return forge::cuda::NoDeviceReason();
#else
  return "this build has no CUDA backend (FORGE_CUDA=OFF)";
#endif
}

}  // namespace forge::testing
