// The op harness's matmul runner (op_runner.h): each case's weights prepared by the target's
// backend for each activation dtype (block formats kept as stored, the rest in that dtype), x in
// the dtype, out in the dtype or F32, at every row count of the case; the reference is matmul_ref
// (double sums) over the weights' values as the backend holds them, rows split over the host's
// threads.
#include <algorithm>
#include <numeric>
#include <string>

#include "backend/cuda/quant_test_data.h"
#include "base/thread_pool.h"
#include "support/half_data.h"
#include "support/op_buffers.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

namespace forge::testing {
namespace {

QuantMatrix Weights(const MatmulCase& c, uint64_t seed) {
  QuantMatrix q;
  switch (c.weights) {
    case MatmulCase::Weights::kRandomBlocks:
      return RandomBlocks(c.type, c.first_row + c.n, c.k, seed);
    case MatmulCase::Weights::kQuantized:
      return QuantizedRandom(c.type, c.first_row + c.n, c.k, seed);
    case MatmulCase::Weights::kOracle:
      EXPECT_TRUE(OracleMatrix(c.type, "blk.0.ffn_down.weight", &q)) << TypeName(c.type);
      break;
  }
  return q;
}

// x [m, xs] (zero past k): normal values in F32; in F16 / BF16 values both hold exactly (as the
// kernels' own tests use); with outliers, one in 61 of the normal values scaled by 30, rounded to
// t.
std::vector<float> MatmulActivations(const MatmulCase& c, int64_t k, DType t, int64_t m, int64_t xs,
                                     uint64_t seed) {
  std::vector<float> x = Activations(m, k, xs, !c.outliers && t != DType::kF32, seed);
  if (c.outliers) {
    for (size_t i = 7; i < x.size(); i += 61) x[i] *= 30.0f;
  }
  return Rounded(std::move(x), t);
}

// out [m, w.rows] = matmul_ref over row ranges of w on the host's threads.
std::vector<float> Reference(const WeightView& w, const std::vector<float>& x, int64_t m,
                             int64_t xs, const float* bias) {
  std::vector<float> out(m * w.rows);
  ThreadPool::Global().ParallelFor(
      w.rows,
      [&](int64_t begin, int64_t end) {
        MatmulParams p;
        p.x = x.data();
        p.x_stride = xs;
        p.w = w.Rows(begin, end - begin);
        p.bias = bias != nullptr ? bias + begin : nullptr;
        p.out = out.data() + begin;
        p.out_stride = w.rows;
        p.m = m;
        EXPECT_TRUE(matmul_ref(p).ok());
      },
      8);
  return out;
}

std::string Describe(const MatmulCase& c, int64_t n, int64_t k) {
  const char* weights = c.weights == MatmulCase::Weights::kRandomBlocks ? "random blocks"
                        : c.weights == MatmulCase::Weights::kOracle     ? "llama.cpp's ffn_down"
                        : IsBlockFormat(c.type)                         ? "quantized normal values"
                                                                        : "normal values";
  std::string s = std::string(TypeName(c.type)) + " [" + std::to_string(n) + " x " +
                  std::to_string(k) + "] " + weights + (c.bias ? ", bias" : "");
  if (c.first_row) s += ", rows from " + std::to_string(c.first_row);
  if (c.x_pad) s += ", x stride k+" + std::to_string(c.x_pad);
  if (c.out_pad) s += ", out stride n+" + std::to_string(c.out_pad);
  return s + (c.outliers ? ", outliers" : "");
}

}  // namespace

void RunMatmulCases(std::span<OpTarget> targets) {
  const std::vector<MatmulCase>& cases = MatmulCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatmulCase& c = cases[i];
    const int64_t m_max = *std::max_element(c.ms.begin(), c.ms.end());
    const int64_t all_ms = std::accumulate(c.ms.begin(), c.ms.end(), int64_t{0});
    // Oracle weights: their size is the file's (256 x 512).
    const int64_t est_nk = c.weights == MatmulCase::Weights::kOracle ? 256 * 512 : c.n * c.k;
    bool any = false;
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      any = any || !TargetsFor(targets, t, all_ms * est_nk).empty();
    }
    if (!any) continue;
    const QuantMatrix w = Weights(c, 1000 + i);
    if (w.n == 0) continue;
    const int64_t n = w.n - c.first_row, k = w.k, xs = k + c.x_pad, os = n + c.out_pad;
    const WeightView stored{w.type, w.n, w.k, w.row_bytes, w.bytes.data()};
    const std::vector<float> bias = c.bias ? RandomVector(n, 2000 + i) : std::vector<float>{};
    const std::string what_case = Describe(c, n, k);
    // The reference of the last dtype, reused where x and the weights are the same.
    std::vector<float> last_x, last_held, ref;
    ForEachDType(targets, all_ms * n * k, [&](DType t, std::span<const OpTarget* const> ts) {
      const std::vector<float> x = MatmulActivations(c, k, t, m_max, xs, 3000 + i);
      // The weights as the backend holds them: block formats as stored, the rest in t.
      const std::vector<float> held =
          IsBlockFormat(c.type) ? std::vector<float>{} : Rounded(w.values, t);
      if (ref.empty() || x != last_x || held != last_held) {
        const WeightView ref_w = F32View(held.empty() ? w.values : held, w.n, k);
        ref = Reference(ref_w.Rows(c.first_row, n), x, m_max, xs, c.bias ? bias.data() : nullptr);
        last_x = x;
        last_held = held;
      }
      for (const OpTarget* tg : ts) {
        auto dw = tg->backend->PrepareWeight(stored, t);
        ASSERT_TRUE(dw.ok()) << what_case << ": " << dw.status().ToString();
        for (DType ot : Distinct({t, DType::kF32})) {
          for (int64_t m : c.ms) {
            const std::string what = std::string("matmul x ") + DTypeName(t) + " out " +
                                     DTypeName(ot) + " | " + what_case + ", m=" + std::to_string(m);
            OpBuffers b(*tg->backend);
            MatmulParams p;
            p.x = b.In(std::vector<float>(x.begin(), x.begin() + m * xs), t);
            p.x_stride = c.x_pad ? xs : 0;
            p.w = dw->Rows(c.first_row, n);
            p.bias = c.bias ? b.In(bias) : nullptr;
            p.out = b.Out("out", ot, Strided(ref.data(), m, n, os), BoundFor({t, ot}));
            p.out_stride = c.out_pad ? os : 0;
            p.m = m;
            p.x_type = t;
            p.out_type = ot;
            RunOp(*tg, b, what, p, &Backend::Matmul, tg->matmul);
          }
        }
      }
    });
  }
}

}  // namespace forge::testing
