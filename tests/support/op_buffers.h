// What the op harness's runners (op_runner.h) share: an op's buffers on a backend (inputs uploaded
// once; outputs poisoned and in-place buffers restored before each run; guard bytes after each;
// checked after each run), running one case on a target by its own op and every variant that
// takes it, and the inputs' values, bounds and dtype loops.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "support/half_data.h"
#include "support/op_runner.h"

namespace forge::testing {

inline constexpr size_t kGuardBytes = 64;  // 0xFF bytes (NaN in F32, F16 and BF16), as the poison

// A backend's copies of one op's buffers.
class OpBuffers {
 public:
  explicit OpBuffers(Backend& backend) : be_(backend) {}

  // An input: `bytes` uploaded once.
  void* In(const void* data, size_t bytes);
  template <typename T>
  T* In(const std::vector<T>& v) {
    return static_cast<T*>(In(v.data(), v.size() * sizeof(T)));
  }
  // Values stored as t (they must be exact in t: Rounded).
  void* In(const std::vector<float>& v, DType t);
  // An output of want.size() elements of t, poisoned before each run, within `bound` of want
  // after it (a NaN in want: the element must stay poisoned).
  void* Out(std::string name, DType t, std::vector<float> want, double bound);
  // Updated in place: init before each run, want after it.
  void* InOut(std::string name, DType t, const std::vector<float>& init, std::vector<float> want,
              double bound);

  // Before a run; false (with a failure) where an upload failed.
  bool Reset();
  // After a run: guards intact, every output within its bound (`tighter` instead where smaller
  // and > 0); `run` names the run in every failure.
  void Check(const std::string& run, double tighter) const;

 private:
  struct Output {
    void* dev;
    std::vector<uint8_t> init;  // with the guard bytes
    std::string name;
    DType t;
    std::vector<float> want;
    double bound;
  };
  void* Alloc(size_t bytes);
  // A checked buffer holding `init` (its guard bytes included) before each run.
  void* AddOutput(std::string name, DType t, std::vector<uint8_t> init, std::vector<float> want,
                  double bound);

  Backend& be_;
  std::vector<std::unique_ptr<BackendBuffer>> mem_;
  std::vector<Output> checked_;
};

// One run: restore the buffers, run, synchronize, check.
void RunOnce(Backend& be, OpBuffers& bufs, const std::string& label,
             const std::function<Status()>& run, double tighter);

// Runs p on the target by its backend's op, then by every variant whose why_not is null (one at
// least where variants are given). `what` names the op, its dtypes and the case.
template <typename P>
void RunOp(const OpTarget& t, OpBuffers& bufs, const std::string& what, const P& p,
           Status (Backend::*op)(const P&), const std::vector<OpVariant<P>>& variants = {}) {
  const std::string on = what + " | " + t.backend->name() + "/";
  RunOnce(
      *t.backend, bufs, on + "op", [&] { return (t.backend->*op)(p); }, 0);
  if (variants.empty()) return;
  std::string why;
  int ran = 0;
  for (const OpVariant<P>& v : variants) {
    if (const char* w = v.why_not(p)) {
      why += " " + v.name + ": " + w + ";";
      continue;
    }
    ++ran;
    RunOnce(
        *t.backend, bufs, on + v.name, [&] { return v.run(p); }, v.bound ? v.bound(p) : 0);
  }
  EXPECT_GT(ran, 0) << what << " | " << t.backend->name() << ": no variant runs it:" << why;
}

// The targets that run dtype t and a case of `cost`.
std::vector<const OpTarget*> TargetsFor(std::span<OpTarget> targets, DType t, int64_t cost);
// fn(t, targets) for each activation dtype some target runs a case of `cost` in.
void ForEachDType(std::span<OpTarget> targets, int64_t cost,
                  const std::function<void(DType, std::span<const OpTarget* const>)>& fn);
// The distinct types of the list, in order.
std::vector<DType> Distinct(std::initializer_list<DType> types);

// DESIGN.md's bound for an op whose inputs and outputs have these types: F32 1e-5, else 1e-2.
double BoundFor(std::initializer_list<DType> types);
// A weight format of blocks (not F32 / F16 / BF16).
inline bool IsBlockFormat(GgmlType t) { return GetTypeTraits(t).block_elems > 1; }
// n normal values rounded to t.
std::vector<float> Values(int64_t n, uint64_t seed, DType t);
// An F32 [rows, cols] view of host values.
WeightView F32View(const std::vector<float>& v, int64_t rows, int64_t cols);
// rows x n values laid out in rows of `stride` (NaN between them: left poisoned).
std::vector<float> Strided(const float* dense, int64_t rows, int64_t n, int64_t stride);

}  // namespace forge::testing
