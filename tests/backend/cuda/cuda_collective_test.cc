// The NCCL collective (MakeNcclCollective) over every CUDA device, one thread per rank: in-place
// all-reduce sums and all-gathers checked against sums and concatenations taken on the host,
// eagerly and recorded into each rank's CUDA graph; backends on two devices driven from one
// thread; and the errors for wrong backends and a missing NCCL library.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/nccl_collective.h"
#include "support/test_env.h"

namespace forge {
namespace {

// One CUDA backend per device and the NCCL collective over them (destroyed first).
struct Ranks {
  std::vector<std::unique_ptr<Backend>> backends;
  std::unique_ptr<Collective> collective;
  int size() const { return static_cast<int>(backends.size()); }
};

// Every device's backend and the collective; nullopt after a failure or a skip (set in *skip).
std::optional<Ranks> MakeRanks(std::string* skip) {
  Ranks r;
  std::vector<Backend*> ptrs;
  for (int d = 0; d < cuda::DeviceCount(); ++d) {
    auto b = MakeCudaBackend(d);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return std::nullopt;
    ptrs.push_back(b->get());
    r.backends.push_back(std::move(b).value());
  }
  auto c = MakeNcclCollective(ptrs);
  if (!c.ok() && c.status().code() == StatusCode::kUnavailable && testing::GpusRequired() < 2) {
    *skip = c.status().ToString();  // no NCCL library here: skipped unless GPUs are required
    return std::nullopt;
  }
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return std::nullopt;
  r.collective = std::move(c).value();
  return r;
}

#define FORGE_MAKE_RANKS(var)                          \
  FORGE_REQUIRE_GPUS_OR_SKIP(2);                       \
  std::string var##_skip;                              \
  std::optional<Ranks> var = MakeRanks(&var##_skip);   \
  if (!var##_skip.empty()) GTEST_SKIP() << var##_skip; \
  ASSERT_TRUE(var.has_value())

// Runs fn(rank) on a thread per rank and returns each rank's status. A failing rank aborts the
// collective so that the others are not left waiting for it.
std::vector<Status> OnRanks(Ranks& ranks, const std::function<Status(int)>& fn) {
  std::vector<Status> st(ranks.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      st[r] = fn(r);
      if (!st[r].ok()) ranks.collective->Abort();
    });
  }
  for (std::thread& t : threads) t.join();
  return st;
}

#define EXPECT_RANKS_OK(statuses)                                                           \
  for (size_t _r = 0; _r < (statuses).size(); ++_r) {                                       \
    EXPECT_TRUE((statuses)[_r].ok()) << "rank " << _r << ": " << (statuses)[_r].ToString(); \
  }

std::vector<float> RankData(int rank, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + rank);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng) * static_cast<float>(rank + 1);
  return v;
}

// Checks every rank's result against the sum taken on the host in double precision, within
// float rounding of the summands (NCCL's order of summation is its own).
void ExpectSums(const std::vector<std::vector<float>>& in,
                const std::vector<std::vector<float>>& out, const std::string& what) {
  const size_t n = in[0].size();
  const int ranks = static_cast<int>(in.size());
  int64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0, mag = 0;
    for (int r = 0; r < ranks; ++r) {
      sum += in[r][i];
      mag += std::fabs(in[r][i]);
    }
    const double tol = ranks * std::ldexp(mag, -23) + 1e-30;
    for (int r = 0; r < ranks; ++r) {
      const float got = out[r][i];
      if (!(std::fabs(got - sum) <= tol)) {
        if (++bad <= 5) {
          ADD_FAILURE() << what << ": rank " << r << " element " << i << " = " << got
                        << ", host sum " << sum << " (tolerance " << tol << ")";
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements off the host sum";
  // NCCL's ring and tree algorithms hand every rank the same reduced values.
  for (int r = 1; r < ranks; ++r) {
    EXPECT_TRUE(out[r] == out[0]) << what << ": rank " << r << " differs from rank 0";
  }
}

TEST(CudaCollectiveTest, AllReduceSumMatchesHostSum) {
  FORGE_MAKE_RANKS(ranks);
  Ranks& rk = *ranks;
  EXPECT_EQ(rk.collective->size(), rk.size());
  EXPECT_EQ(rk.collective->name().rfind("nccl ", 0), 0u) << rk.collective->name();
  for (int64_t n : {int64_t{1}, int64_t{4096}, (int64_t{1} << 20) + 3}) {
    std::vector<std::vector<float>> in(rk.size()), out(rk.size());
    for (int r = 0; r < rk.size(); ++r) {
      in[r] = RankData(r, n, static_cast<uint64_t>(n));
      out[r].assign(n, NAN);
    }
    const auto st = OnRanks(rk, [&](int r) -> Status {
      Backend& be = *rk.backends[r];
      ASSIGN_OR_RETURN(auto buf, be.Alloc(n * 4));
      RETURN_IF_ERROR(be.Upload(buf->data(), in[r].data(), n * 4));
      RETURN_IF_ERROR(rk.collective->AllReduceSum(r, buf->f32(), n));
      RETURN_IF_ERROR(be.Synchronize());
      return be.Download(out[r].data(), buf->data(), n * 4);
    });
    EXPECT_RANKS_OK(st);
    ExpectSums(in, out, "n=" + std::to_string(n));
  }
}

TEST(CudaCollectiveTest, AllGatherConcatenatesRanks) {
  FORGE_MAKE_RANKS(ranks);
  Ranks& rk = *ranks;
  const int n_ranks = rk.size();
  for (int64_t bytes : {int64_t{1}, int64_t{1000}, (int64_t{1} << 20) + 5}) {
    std::vector<std::vector<uint8_t>> in(n_ranks), out(n_ranks);
    std::vector<uint8_t> want;
    for (int r = 0; r < n_ranks; ++r) {
      std::mt19937_64 rng(bytes * 31 + r);
      in[r].resize(bytes);
      for (uint8_t& b : in[r]) b = static_cast<uint8_t>(rng());
      want.insert(want.end(), in[r].begin(), in[r].end());
      out[r].assign(bytes * n_ranks, 0xEE);
    }
    const auto st = OnRanks(rk, [&](int r) -> Status {
      Backend& be = *rk.backends[r];
      ASSIGN_OR_RETURN(auto send, be.Alloc(bytes));
      ASSIGN_OR_RETURN(auto recv, be.Alloc(bytes * n_ranks));
      RETURN_IF_ERROR(be.Upload(send->data(), in[r].data(), bytes));
      RETURN_IF_ERROR(rk.collective->AllGather(r, send->data(), recv->data(), bytes));
      RETURN_IF_ERROR(be.Synchronize());
      return be.Download(out[r].data(), recv->data(), bytes * n_ranks);
    });
    EXPECT_RANKS_OK(st);
    for (int r = 0; r < n_ranks; ++r) {
      EXPECT_TRUE(out[r] == want) << "bytes=" << bytes << ": rank " << r;
    }
  }
}

// The ops recorded into a CUDA graph per rank (each rank captures on its own thread), then
// replayed with new data uploaded before each replay; an eager op after the replays.
TEST(CudaCollectiveTest, OpsRecordedInGraphsReplayWithNewData) {
  FORGE_MAKE_RANKS(ranks);
  Ranks& rk = *ranks;
  const int n_ranks = rk.size();
  constexpr int kRounds = 3;
  for (int64_t n : {int64_t{4096}, (int64_t{1} << 20) + 3}) {
    const int64_t gather_bytes = 12288;
    std::vector<std::vector<std::vector<float>>> in(kRounds), out(kRounds);
    std::vector<std::vector<std::vector<uint8_t>>> gin(kRounds), gout(kRounds);
    for (int k = 0; k < kRounds; ++k) {
      in[k].resize(n_ranks);
      out[k].resize(n_ranks);
      gin[k].resize(n_ranks);
      gout[k].resize(n_ranks);
      for (int r = 0; r < n_ranks; ++r) {
        in[k][r] = RankData(r, n, static_cast<uint64_t>(n + 17 * k));
        out[k][r].assign(n, NAN);
        std::mt19937_64 rng(k * 7919 + r);
        gin[k][r].resize(gather_bytes);
        for (uint8_t& b : gin[k][r]) b = static_cast<uint8_t>(rng());
        gout[k][r].assign(gather_bytes * n_ranks, 0);
      }
    }
    std::vector<float> eager_in(n_ranks), eager_out(n_ranks, NAN);
    for (int r = 0; r < n_ranks; ++r) eager_in[r] = static_cast<float>(r + 1);
    const auto st = OnRanks(rk, [&](int r) -> Status {
      Backend& be = *rk.backends[r];
      ASSIGN_OR_RETURN(auto data, be.Alloc(n * 4));
      ASSIGN_OR_RETURN(auto send, be.Alloc(gather_bytes));
      ASSIGN_OR_RETURN(auto recv, be.Alloc(gather_bytes * n_ranks));
      RETURN_IF_ERROR(be.Synchronize());
      RETURN_IF_ERROR(be.BeginCapture());
      Status rec = rk.collective->AllReduceSum(r, data->f32(), n);
      if (rec.ok()) rec = rk.collective->AllGather(r, send->data(), recv->data(), gather_bytes);
      auto graph = be.EndCapture();
      RETURN_IF_ERROR(rec);
      RETURN_IF_ERROR(graph.status());
      for (int k = 0; k < kRounds; ++k) {
        RETURN_IF_ERROR(be.Upload(data->data(), in[k][r].data(), n * 4));
        RETURN_IF_ERROR(be.Upload(send->data(), gin[k][r].data(), gather_bytes));
        RETURN_IF_ERROR((*graph)->Replay());
        RETURN_IF_ERROR(be.Synchronize());
        RETURN_IF_ERROR(be.Download(out[k][r].data(), data->data(), n * 4));
        RETURN_IF_ERROR(be.Download(gout[k][r].data(), recv->data(), gather_bytes * n_ranks));
      }
      // Eager ops still run between and after replays.
      RETURN_IF_ERROR(be.Upload(data->data(), &eager_in[r], 4));
      RETURN_IF_ERROR(rk.collective->AllReduceSum(r, data->f32(), 1));
      RETURN_IF_ERROR(be.Synchronize());
      return be.Download(&eager_out[r], data->data(), 4);
    });
    EXPECT_RANKS_OK(st);
    for (int k = 0; k < kRounds; ++k) {
      ExpectSums(in[k], out[k], "graph n=" + std::to_string(n) + " round " + std::to_string(k));
      std::vector<uint8_t> want;
      for (int r = 0; r < n_ranks; ++r) want.insert(want.end(), gin[k][r].begin(), gin[k][r].end());
      for (int r = 0; r < n_ranks; ++r) {
        EXPECT_TRUE(gout[k][r] == want) << "graph all-gather round " << k << " rank " << r;
      }
    }
    const float eager_sum = n_ranks * (n_ranks + 1) / 2.0f;
    for (int r = 0; r < n_ranks; ++r) EXPECT_EQ(eager_out[r], eager_sum) << "rank " << r;
  }
}

// Two backends on different devices used alternately from one thread: each op runs on its own
// backend's device whatever device the thread had current.
TEST(CudaCollectiveTest, BackendsOnTwoDevicesFromOneThread) {
  FORGE_REQUIRE_GPUS_OR_SKIP(2);
  auto b0 = MakeCudaBackend(0), b1 = MakeCudaBackend(1);
  ASSERT_TRUE(b0.ok() && b1.ok()) << b0.status().ToString() << " " << b1.status().ToString();
  Backend* be[2] = {b0->get(), b1->get()};
  const int64_t n = 1000;
  std::vector<std::unique_ptr<BackendBuffer>> bufs[2];
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = 0.5f * i, b[i] = 3.0f - i;
  for (int d : {1, 0, 1}) {  // the thread's current device is the other backend's at each step
    for (int k = 0; k < 3; ++k) bufs[d].push_back(be[d]->Alloc(n * 4).value());
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, bufs[d].back()->data()), cudaSuccess);
    EXPECT_EQ(attr.device, d);
  }
  for (int d : {1, 0}) {
    ASSERT_TRUE(be[d]->Upload(bufs[d][0]->data(), a.data(), n * 4).ok());
    ASSERT_TRUE(be[d]->Upload(bufs[d][1]->data(), b.data(), n * 4).ok());
  }
  for (int d : {1, 0}) {
    const Status st = be[d]->Add({bufs[d][0]->f32(), bufs[d][1]->f32(), bufs[d][2]->f32(), n});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  for (int d : {0, 1}) {
    std::vector<float> got(n);
    ASSERT_TRUE(be[d]->Synchronize().ok());
    ASSERT_TRUE(be[d]->Download(got.data(), bufs[d][2]->data(), n * 4).ok());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], a[i] + b[i]) << "cuda:" << d << " " << i;
  }
  // Buffers freed while the other device is current.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  bufs[1].clear();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  bufs[0].clear();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaCollectiveTest, RefusesNonCudaBackend) {
  auto cpu = MakeCpuBackend();
  Backend* one[] = {cpu.get()};
  auto c = MakeNcclCollective(one);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
  EXPECT_NE(c.status().message().find("not a CUDA backend"), std::string::npos)
      << c.status().ToString();
  auto none = MakeNcclCollective(std::span<Backend* const>());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
}

TEST(CudaCollectiveTest, RefusesTwoRanksOnOneDevice) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto a = MakeCudaBackend(0), b = MakeCudaBackend(0);
  ASSERT_TRUE(a.ok() && b.ok());
  Backend* two[] = {a->get(), b->get()};
  auto c = MakeNcclCollective(two);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
  EXPECT_NE(c.status().message().find("both on cuda:0"), std::string::npos)
      << c.status().ToString();
}

// Sets an environment variable for a scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CudaCollectiveTest, LibraryCandidatesHonourForgeNcclLib) {
  {
    ScopedEnv env("FORGE_NCCL_LIB", "/opt/x/libnccl.so.2");
    EXPECT_EQ(cuda::NcclLibraryCandidates(), std::vector<std::string>{"/opt/x/libnccl.so.2"});
  }
  ScopedEnv env("FORGE_NCCL_LIB", "");
  const std::vector<std::string> c = cuda::NcclLibraryCandidates();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0], "libnccl.so.2");
  bool wheel = false;
  for (const std::string& p : c) wheel = wheel || p.find("nvidia/nccl/lib/libnccl.so.2") != p.npos;
  EXPECT_TRUE(wheel);
}

TEST(CudaCollectiveTest, MissingLibraryIsUnavailable) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto b = MakeCudaBackend(0);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ScopedEnv env("FORGE_NCCL_LIB", "/nonexistent/forge-test/libnccl.so.2");
  Backend* one[] = {b->get()};
  auto c = MakeNcclCollective(one);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("/nonexistent/forge-test/libnccl.so.2"), std::string::npos) << m;
  EXPECT_NE(m.find("FORGE_NCCL_LIB"), std::string::npos) << m;
}

}  // namespace
}  // namespace forge
