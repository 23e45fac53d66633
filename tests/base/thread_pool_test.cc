// The thread pool's size and split: physical cores counted from synthetic topologies (hyper-thread
// siblings, two packages, a core id missing) and from a synthetic sysfs tree; every index run
// exactly once with every thread given a share; Resize; nested calls run inline.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/cpu_topology.h"

namespace forge {
namespace {

std::function<std::optional<CpuCoreId>(int)> FromMap(std::map<int, CpuCoreId> m) {
  return [m](int cpu) -> std::optional<CpuCoreId> {
    auto it = m.find(cpu);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CpuTopologyTest, SiblingsOfOneCoreCountOnce) {
  // 4 cores with 2 hyper-threads each, numbered as Linux does (cpu i and i + 4 are siblings).
  std::map<int, CpuCoreId> topo;
  for (int c = 0; c < 8; ++c) topo[c] = {0, c % 4};
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(CountPhysicalCores(all, FromMap(topo)), 4);
  // A mask of two siblings and one other core (taskset -c 0,4,1).
  const std::vector<int> mask = {0, 1, 4};
  EXPECT_EQ(CountPhysicalCores(mask, FromMap(topo)), 2);
}

TEST(CpuTopologyTest, CoreIdsRepeatAcrossPackages) {
  std::map<int, CpuCoreId> topo;
  for (int c = 0; c < 6; ++c) topo[c] = {c / 3, c % 3};  // core ids 0..2 in each of 2 packages
  const std::vector<int> cpus = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(CountPhysicalCores(cpus, FromMap(topo)), 6);
}

TEST(CpuTopologyTest, UnknownTopologyFallsBackToTheMask) {
  std::map<int, CpuCoreId> topo = {{0, {0, 0}}, {1, {0, 0}}};  // cpu 2 missing
  const std::vector<int> cpus = {0, 1, 2};
  EXPECT_EQ(CountPhysicalCores(cpus, FromMap(topo)), 3);
  EXPECT_EQ(CountPhysicalCores(std::vector<int>{}, FromMap(topo)), 1);
}

TEST(CpuTopologyTest, ReadsSysfsFiles) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / "forge_cpu_topology";
  std::filesystem::remove_all(root);
  auto write = [&](int cpu, const std::string& file, const std::string& text) {
    const auto dir = root / ("cpu" + std::to_string(cpu)) / "topology";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / file) << text;
  };
  write(0, "physical_package_id", "1\n");
  write(0, "core_id", "7\n");
  write(1, "physical_package_id", "1\n");
  write(1, "core_id", "7\n");
  write(2, "physical_package_id", "0\n");  // core_id missing
  auto c0 = ReadCpuCoreId(0, root.string());
  ASSERT_TRUE(c0.has_value());
  EXPECT_EQ(c0->package, 1);
  EXPECT_EQ(c0->core, 7);
  EXPECT_FALSE(ReadCpuCoreId(2, root.string()).has_value());
  EXPECT_FALSE(ReadCpuCoreId(3, root.string()).has_value());
  auto reader = [&](int cpu) { return ReadCpuCoreId(cpu, root.string()); };
  EXPECT_EQ(CountPhysicalCores(std::vector<int>{0, 1}, reader), 1);
  EXPECT_EQ(CountPhysicalCores(std::vector<int>{0, 1, 2}, reader), 3);
  std::filesystem::remove_all(root);
}

TEST(CpuTopologyTest, ThisProcessHasAtLeastOneCoreAndNoMoreThanItsCpus) {
  const int cores = PhysicalCoresAvailable();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, static_cast<int>(AllowedCpus().size()));
}

TEST(ThreadPoolTest, SharesCoverEveryIndexOnceAndDifferByAtMostAGrain) {
  for (int64_t n : {1, 7, 16, 17, 100, 1001}) {
    for (int64_t grain : {1, 4, 8}) {
      for (int parts = 1; parts <= 9; ++parts) {
        int64_t next = 0, min_size = n, max_size = 0;
        for (int i = 0; i < parts; ++i) {
          auto [b, e] = ThreadPool::Share(n, grain, parts, i);
          ASSERT_EQ(b, next) << n << " " << grain << " " << parts << " " << i;
          ASSERT_LE(b, e);
          if (e < n) {
            EXPECT_EQ(e % grain, 0);
          }
          next = e;
          min_size = std::min(min_size, e - b);
          max_size = std::max(max_size, e - b);
        }
        EXPECT_EQ(next, n);
        // Every part has work when there are at least as many grains as parts.
        if ((n + grain - 1) / grain >= parts && n % grain == 0) {
          EXPECT_GT(min_size, 0);
        }
        EXPECT_LE(max_size - min_size, grain);
      }
    }
  }
}

TEST(ThreadPoolTest, EveryThreadTakesAShare) {
  ThreadPool pool(4);
  ASSERT_EQ(pool.size(), 4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::vector<int> hits(37, 0);
  pool.ParallelFor(37, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(ids.size(), 4u);
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(ThreadPoolTest, ResizeAndNestedCalls) {
  ThreadPool pool(2);
  int64_t before = 0;
  pool.ParallelFor(1, [&](int64_t b, int64_t e) { before += e - b; });
  pool.ParallelFor(4, [&](int64_t, int64_t) {});
  pool.Resize(3);  // the new workers must not rerun the calls before
  EXPECT_EQ(before, 1);
  EXPECT_EQ(pool.size(), 3);
  std::vector<int> hits(50, 0);
  pool.ParallelFor(5, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // A call from inside a share runs inline on that thread.
      pool.ParallelFor(10, [&](int64_t ib, int64_t ie) {
        for (int64_t j = ib; j < ie; ++j) ++hits[i * 10 + j];
      });
    }
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  pool.Resize(1);
  EXPECT_EQ(pool.size(), 1);
  int64_t total = 0;
  pool.ParallelFor(
      1000, [&](int64_t b, int64_t e) { total += e - b; }, 8);
  EXPECT_EQ(total, 1000);
}

TEST(ThreadPoolTest, ManyShortCallsInARow) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 300; ++call) {
    pool.ParallelFor(6, [&](int64_t b, int64_t e) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 1800);
}

}  // namespace
}  // namespace forge
