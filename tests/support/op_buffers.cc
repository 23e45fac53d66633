// OpBuffers and the op harness's shared helpers (op_buffers.h).
#include "support/op_buffers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/op_harness.h"

namespace forge::testing {

void* OpBuffers::Alloc(size_t bytes) {
  auto buf = be_.Alloc(bytes + kGuardBytes);
  EXPECT_TRUE(buf.ok()) << buf.status().ToString();
  if (!buf.ok()) return nullptr;
  mem_.push_back(std::move(buf).value());
  return mem_.back()->data();
}

void* OpBuffers::In(const void* data, size_t bytes) {
  std::vector<uint8_t> b(bytes + kGuardBytes, 0xFF);
  std::memcpy(b.data(), data, bytes);
  void* p = Alloc(bytes);
  if (p != nullptr) {
    EXPECT_TRUE(be_.Upload(p, b.data(), b.size()).ok());
  }
  return p;
}

void* OpBuffers::In(const std::vector<float>& v, DType t) {
  const std::vector<uint8_t> b = ToBytes(v, t);
  return In(b.data(), b.size());
}

void* OpBuffers::Out(std::string name, DType t, std::vector<float> want, double bound) {
  std::vector<uint8_t> poison(want.size() * DTypeSize(t) + kGuardBytes, 0xFF);
  return AddOutput(std::move(name), t, std::move(poison), std::move(want), bound);
}

void* OpBuffers::InOut(std::string name, DType t, const std::vector<float>& init,
                       std::vector<float> want, double bound) {
  std::vector<uint8_t> b = ToBytes(init, t);
  b.resize(b.size() + kGuardBytes, 0xFF);
  return AddOutput(std::move(name), t, std::move(b), std::move(want), bound);
}

void* OpBuffers::AddOutput(std::string name, DType t, std::vector<uint8_t> init,
                           std::vector<float> want, double bound) {
  void* p = Alloc(init.size() - kGuardBytes);
  checked_.push_back({p, std::move(init), std::move(name), t, std::move(want), bound});
  return p;
}

bool OpBuffers::Reset() {
  for (const Output& c : checked_) {
    const Status st = c.dev == nullptr ? InternalError("no buffer")
                                       : be_.Upload(c.dev, c.init.data(), c.init.size());
    if (!st.ok()) {
      ADD_FAILURE() << c.name << ": " << st.ToString();
      return false;
    }
  }
  return true;
}

void OpBuffers::Check(const std::string& run, double tighter) const {
  for (const Output& c : checked_) {
    std::vector<uint8_t> got(c.init.size());
    const Status st = be_.Download(got.data(), c.dev, got.size());
    if (!st.ok()) {
      ADD_FAILURE() << run << ": " << c.name << ": " << st.ToString();
      continue;
    }
    const size_t end = got.size() - kGuardBytes;
    EXPECT_TRUE(std::all_of(got.begin() + end, got.end(), [](uint8_t b) { return b == 0xFF; }))
        << run << ": " << c.name << " written past its end";
    std::vector<float> ref, val;
    int64_t stray = 0, first = -1;
    for (size_t i = 0; i < c.want.size(); ++i) {
      const float g = ValueAt(got, i, c.t);
      if (std::isnan(c.want[i])) {
        if (!std::isnan(g) && stray++ == 0) first = static_cast<int64_t>(i);
        continue;
      }
      ref.push_back(c.want[i]);
      val.push_back(g);
    }
    EXPECT_EQ(stray, 0) << run << ": " << c.name << " written between its rows (first at element "
                        << first << ")";
    const double bound = tighter > 0 ? std::min(tighter, c.bound) : c.bound;
    EXPECT_TRUE(NormalizedWithin(ref.data(), val.data(), static_cast<int64_t>(ref.size()), bound))
        << run << ": " << c.name;
  }
}

void RunOnce(Backend& be, OpBuffers& bufs, const std::string& label,
             const std::function<Status()>& run, double tighter) {
  if (!bufs.Reset()) {
    ADD_FAILURE() << label << ": the buffers could not be set";
    return;
  }
  Status st = run();
  if (st.ok()) st = be.Synchronize();
  if (!st.ok()) {
    ADD_FAILURE() << label << ": " << st.ToString();
    return;
  }
  bufs.Check(label, tighter);
}

std::vector<const OpTarget*> TargetsFor(std::span<OpTarget> targets, DType t, int64_t cost) {
  std::vector<const OpTarget*> out;
  for (const OpTarget& x : targets) {
    const bool runs_t = std::find(x.dtypes.begin(), x.dtypes.end(), t) != x.dtypes.end();
    if (runs_t && (x.max_cost == 0 || cost <= x.max_cost)) out.push_back(&x);
  }
  return out;
}

void ForEachDType(std::span<OpTarget> targets, int64_t cost,
                  const std::function<void(DType, std::span<const OpTarget* const>)>& fn) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<const OpTarget*> ts = TargetsFor(targets, t, cost);
    if (!ts.empty()) fn(t, ts);
  }
}

std::vector<DType> Distinct(std::initializer_list<DType> types) {
  std::vector<DType> out;
  for (DType t : types) {
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

double BoundFor(std::initializer_list<DType> types) {
  for (DType t : types) {
    if (t != DType::kF32) return 1e-2;
  }
  return 1e-5;
}

std::vector<float> Values(int64_t n, uint64_t seed, DType t) {
  return Rounded(RandomVector(n, seed), t);
}

WeightView F32View(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return {GgmlType::kF32, rows, cols, cols * 4, reinterpret_cast<const uint8_t*>(v.data())};
}

std::vector<float> Strided(const float* dense, int64_t rows, int64_t n, int64_t stride) {
  std::vector<float> v(rows == 0 ? 0 : (rows - 1) * stride + n, std::nanf(""));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(dense + r * n, n, v.begin() + r * stride);
  return v;
}

}  // namespace forge::testing
