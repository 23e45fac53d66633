// Counting the physical cores of the affinity mask from sysfs.
#include "base/cpu_topology.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>

namespace forge {
namespace {

std::optional<int> ReadInt(const std::string& path) {
  std::ifstream in(path);
  int v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

int CountPhysicalCores(std::span<const int> cpus,
                       const std::function<std::optional<CpuCoreId>(int cpu)>& core_of) {
  std::set<CpuCoreId> cores;
  for (int cpu : cpus) {
    std::optional<CpuCoreId> id = core_of(cpu);
    if (!id) return std::max<int>(1, static_cast<int>(cpus.size()));
    cores.insert(*id);
  }
  return std::max<int>(1, static_cast<int>(cores.size()));
}

std::optional<CpuCoreId> ReadCpuCoreId(int cpu, const std::string& sysfs_cpu_dir) {
  const std::string dir = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/";
  std::optional<int> package = ReadInt(dir + "physical_package_id");
  std::optional<int> core = ReadInt(dir + "core_id");
  if (!package || !core) return std::nullopt;
  return CpuCoreId{*package, *core};
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int n = online > 0 ? static_cast<int>(online)
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int c = 0; c < n; ++c) cpus.push_back(c);
  }
  return cpus;
}

int PhysicalCoresAvailable() {
  const std::vector<int> cpus = AllowedCpus();
  return CountPhysicalCores(cpus, [](int cpu) { return ReadCpuCoreId(cpu); });
}

}  // namespace forge
