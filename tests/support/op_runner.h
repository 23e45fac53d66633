// The cross-backend op harness's runner: each case of op_cases.h on every target (a backend with
// the activation dtypes it runs) in every dtype form the op takes, against the op's _ref twin run
// on the host on the same rounded inputs, within DESIGN.md's bound for the dtypes involved (F32
// 1e-5, F16/BF16 1e-2; copies and lookups exactly). Outputs are poisoned (NaN) before each run and
// followed by guard bytes that must survive; output elements between strided rows must stay
// poisoned. Each run is named in its failure messages: op, dtypes, case, backend and variant.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace forge::testing {

// One way to run an op besides the backend's own (a kernel variant of its dispatch).
template <typename P>
struct OpVariant {
  std::string name;
  // The first condition the variant does not meet; null: it runs p.
  std::function<const char*(const P&)> why_not;
  std::function<Status(const P&)> run;
  // A bound tighter than the dtypes' where the kernel promises one (0: none); may be empty.
  std::function<double(const P&)> bound;
};

// Where the cases run: the backend's own op on each, then every variant whose why_not is null (at
// least one must run each case where variants are given).
struct OpTarget {
  Backend* backend = nullptr;
  std::vector<DType> dtypes = {DType::kF32};  // activation dtypes
  int64_t max_cost = 0;  // the largest case (multiply-adds of its reference) it runs; 0: any
  std::vector<OpVariant<MatmulParams>> matmul;
  std::vector<OpVariant<AttentionParams>> attention;
};

void RunEmbeddingCases(std::span<OpTarget> targets);
void RunRmsNormCases(std::span<OpTarget> targets);
void RunAddRmsNormCases(std::span<OpTarget> targets);
void RunLayerNormCases(std::span<OpTarget> targets);
void RunPoolCases(std::span<OpTarget> targets);
void RunMatmulCases(std::span<OpTarget> targets);
void RunRopeCases(std::span<OpTarget> targets);
void RunKvWriteCases(std::span<OpTarget> targets);
void RunRopeKvWriteCases(std::span<OpTarget> targets);
void RunAttentionCases(std::span<OpTarget> targets);
void RunSwigluCases(std::span<OpTarget> targets);
void RunAddCases(std::span<OpTarget> targets);
void RunGatherRowsCases(std::span<OpTarget> targets);
void RunSoftCapCases(std::span<OpTarget> targets);
void RunRouteCases(std::span<OpTarget> targets);
void RunExpertSumCases(std::span<OpTarget> targets);

}  // namespace forge::testing

// One test per op, in a fixture whose Targets() returns the std::vector<OpTarget> to run on.
#define FORGE_OP_HARNESS_TESTS(Fixture)        \
  FORGE_OP_HARNESS_TEST_(Fixture, Embedding)   \
  FORGE_OP_HARNESS_TEST_(Fixture, RmsNorm)     \
  FORGE_OP_HARNESS_TEST_(Fixture, AddRmsNorm)  \
  FORGE_OP_HARNESS_TEST_(Fixture, LayerNorm)   \
  FORGE_OP_HARNESS_TEST_(Fixture, Pool)        \
  FORGE_OP_HARNESS_TEST_(Fixture, Matmul)      \
  FORGE_OP_HARNESS_TEST_(Fixture, Rope)        \
  FORGE_OP_HARNESS_TEST_(Fixture, KvWrite)     \
  FORGE_OP_HARNESS_TEST_(Fixture, RopeKvWrite) \
  FORGE_OP_HARNESS_TEST_(Fixture, Attention)   \
  FORGE_OP_HARNESS_TEST_(Fixture, Swiglu)      \
  FORGE_OP_HARNESS_TEST_(Fixture, Add)         \
  FORGE_OP_HARNESS_TEST_(Fixture, GatherRows)  \
  FORGE_OP_HARNESS_TEST_(Fixture, SoftCap)     \
  FORGE_OP_HARNESS_TEST_(Fixture, Route)       \
  FORGE_OP_HARNESS_TEST_(Fixture, ExpertSum)
#define FORGE_OP_HARNESS_TEST_(Fixture, Op)                      \
  TEST_F(Fixture, Op) {                                          \
    std::vector<::forge::testing::OpTarget> targets = Targets(); \
    ::forge::testing::Run##Op##Cases(targets);                   \
  }
