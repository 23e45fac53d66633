// The CPU's memory floor: copy bandwidth measured over all cores (bytes read + written per second).
#pragma once

#include <cstdint>

namespace forge {

struct CpuCopyBandwidth {
  double bytes_per_second = 0;  // read + written
  int64_t buffer_bytes = 0;
  int threads = 0;
};

// Copies a buffer much larger than the caches several times over `threads` threads (0: as many
// as the global thread pool runs the ops on) and returns the best rate.
CpuCopyBandwidth MeasureCpuCopyBandwidth(int64_t buffer_bytes = int64_t{512} << 20,
                                         int threads = 0);

// Reads a buffer much larger than the caches (every byte, summed) over `threads` threads (0: as
// many as the global thread pool) several times and returns the best rate in bytes read per
// second: the floor of a decode step, which reads its weights and writes almost nothing.
CpuCopyBandwidth MeasureCpuReadBandwidth(int64_t buffer_bytes = int64_t{512} << 20,
                                         int threads = 0);

}  // namespace forge

namespace forge {

// The CPU backend's F32 matmul rate (FLOP/s) on a 256 x 2048 x 2048 product, best of 3: the
// compute floor for CPU prefill.
double MeasureCpuMatmulRate();

}  // namespace forge
