// The physical cores this process may run on: the CPUs of its affinity mask grouped by the
// (package, core) pair Linux reports for each in /sys/devices/system/cpu/cpuN/topology, so two
// hyper-threads of one core count once. The default size of the thread pool.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace forge {

struct CpuCoreId {
  int package = 0;  // physical_package_id
  int core = 0;     // core_id (unique within its package)
  bool operator<(const CpuCoreId& o) const {
    return package != o.package ? package < o.package : core < o.core;
  }
};

// The number of distinct cores among `cpus`; core_of(cpu) names a CPU's core, or nullopt when it
// is unknown, and then every CPU counts as a core (cpus.size()). At least 1.
int CountPhysicalCores(std::span<const int> cpus,
                       const std::function<std::optional<CpuCoreId>(int cpu)>& core_of);

// The core of `cpu` read from <sysfs_cpu_dir>/cpu<cpu>/topology/{physical_package_id,core_id}.
std::optional<CpuCoreId> ReadCpuCoreId(
    int cpu, const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// The CPUs of this process's affinity mask (sched_getaffinity); all online CPUs where the mask
// cannot be read.
std::vector<int> AllowedCpus();

// CountPhysicalCores over AllowedCpus() with the cores sysfs reports.
int PhysicalCoresAvailable();

}  // namespace forge
