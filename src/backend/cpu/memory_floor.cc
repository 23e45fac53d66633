// MeasureCpuCopyBandwidth and MeasureCpuReadBandwidth: parallel memcpy, or parallel sums of
// 64-bit words, over disjoint slices of a large buffer, the best of 5 runs.
#include "backend/cpu/memory_floor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace forge {
namespace {

// The best of 5 runs of body(t) on `threads` threads at once (each joined), as seconds.
template <typename Body>
double BestSeconds(int threads, const Body& body) {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { body(t); });
    for (auto& th : pool) th.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = rep == 0 ? secs : std::min(best, secs);
  }
  return best;
}

}  // namespace

CpuCopyBandwidth MeasureCpuCopyBandwidth(int64_t buffer_bytes, int threads) {
  if (threads <= 0) threads = ThreadPool::Global().size();
  std::vector<uint8_t> src(buffer_bytes), dst(buffer_bytes);
  for (int64_t i = 0; i < buffer_bytes; i += 4096) src[i] = static_cast<uint8_t>(i >> 12);
  std::memset(dst.data(), 1, dst.size());  // fault the pages in before timing
  const int64_t slice = buffer_bytes / threads;
  const double secs = BestSeconds(threads, [&](int t) {
    const int64_t begin = t * slice;
    const int64_t len = (t == threads - 1) ? buffer_bytes - begin : slice;
    std::memcpy(dst.data() + begin, src.data() + begin, len);
  });
  return {2.0 * static_cast<double>(buffer_bytes) / secs, buffer_bytes, threads};
}

CpuCopyBandwidth MeasureCpuReadBandwidth(int64_t buffer_bytes, int threads) {
  if (threads <= 0) threads = ThreadPool::Global().size();
  const int64_t words = buffer_bytes / 8;
  std::vector<uint64_t> src(words);
  for (int64_t i = 0; i < words; ++i) src[i] = static_cast<uint64_t>(i);
  const int64_t slice = words / threads;
  std::vector<uint64_t> sums(threads);
  const double secs = BestSeconds(threads, [&](int t) {
    const uint64_t* p = src.data() + t * slice;
    const int64_t n = (t == threads - 1) ? words - t * slice : slice;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      a += p[i];
      b += p[i + 1];
      c += p[i + 2];
      d += p[i + 3];
    }
    for (; i < n; ++i) a += p[i];
    sums[t] = a + b + c + d;
  });
  volatile uint64_t sink = 0;
  for (uint64_t v : sums) sink = sink + v;  // the sums are used: the reads stay
  return {static_cast<double>(words * 8) / secs, words * 8, threads};
}

}  // namespace forge

#include "backend/cpu/matmul/matmul.h"

namespace forge {

double MeasureCpuMatmulRate() {
  const int64_t m = 256, n = 2048, k = 2048;
  std::vector<float> x(m * k, 0.5f), w(n * k, 0.25f), out(m * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f;
  WeightView wv{GgmlType::kF32, n, k, k * 4, reinterpret_cast<const uint8_t*>(w.data())};
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    (void)matmul_cpu({x.data(), 0, wv, nullptr, out.data(), 0, m});
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * m * n * k / secs);
  }
  return best;
}

}  // namespace forge
