// The op harness's runners of the encoder ops (op_runner.h): LayerNorm (the F32 residual and the
// F32 normed rows, the cast rows in the activation dtype) and pooling (F32 on every backend, the
// sequences' bounds in backend memory), against layernorm_ref and pool_ref on the host.
#include <string>

#include "backend/cpu/layernorm/layernorm.h"
#include "backend/cpu/pool/pool.h"
#include "support/op_buffers.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

namespace forge::testing {

// x takes the delta and the added row exactly (or stays as it was); out (in place of x, or apart)
// within F32's bound; out_cast, where the case asks, in the activation dtype within its bound.
void RunLayerNormCases(std::span<OpTarget> targets) {
  const std::vector<LayerNormCase>& cases = LayerNormCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const LayerNormCase& c = cases[i];
    const int64_t n = c.rows * c.dim;
    std::vector<float> x = RandomVector(n, 500 + i);
    for (float& v : x) v += c.shift;
    const std::vector<float> delta = RandomVector(n, 520 + i), w = RandomVector(c.dim, 540 + i);
    const std::vector<float> bias = RandomVector(c.dim, 560 + i);
    const std::vector<float> add_row = RandomVector(c.dim, 580 + i);
    std::vector<float> res = x, want(n);
    LayerNormParams ref;
    ref.x = res.data();
    ref.delta = c.delta ? delta.data() : nullptr;
    ref.add_row = c.add_row ? add_row.data() : nullptr;
    ref.weight = w.data();
    ref.bias = c.bias ? bias.data() : nullptr;
    ref.out = want.data();
    ref.n_rows = c.rows;
    ref.dim = c.dim;
    ASSERT_TRUE(layernorm_ref(ref).ok());
    const std::string what_case = std::to_string(c.rows) + " x " + std::to_string(c.dim) +
                                  (c.delta ? ", delta" : "") + (c.add_row ? ", add_row" : "") +
                                  (c.bias ? ", bias" : "") + (c.in_place ? ", in place" : "") +
                                  (c.shift != 0 ? ", shifted by " + std::to_string(c.shift) : "");
    ForEachDType(targets, n, [&](DType t, std::span<const OpTarget* const> ts) {
      if (!c.cast && t != DType::kF32) return;  // without the cast, F32 alone: run once
      const std::string what =
          std::string("layernorm cast ") + (c.cast ? DTypeName(t) : "none") + " | " + what_case;
      for (const OpTarget* tg : ts) {
        OpBuffers b(*tg->backend);
        LayerNormParams p;
        p.x = static_cast<float*>(b.InOut("x", DType::kF32, x, c.in_place ? want : res,
                                          c.in_place ? BoundFor({DType::kF32}) : 0));
        p.delta = c.delta ? b.In(delta) : nullptr;
        p.add_row = c.add_row ? b.In(add_row) : nullptr;
        p.weight = b.In(w);
        p.bias = c.bias ? b.In(bias) : nullptr;
        p.out = c.in_place
                    ? p.x
                    : static_cast<float*>(b.Out("out", DType::kF32, want, BoundFor({DType::kF32})));
        p.out_cast = c.cast ? b.Out("out_cast", t, want, BoundFor({t})) : nullptr;
        p.cast_type = t;
        p.n_rows = c.rows;
        p.dim = c.dim;
        RunOp(*tg, b, what, p, &Backend::LayerNorm);
      }
    });
  }
}

// Every pooling type, normalized and not; F32, within F32's bound.
void RunPoolCases(std::span<OpTarget> targets) {
  const std::vector<PoolCase>& cases = PoolCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const PoolCase& c = cases[i];
    std::vector<int32_t> cu = {0};
    for (int32_t len : c.lens) cu.push_back(cu.back() + len);
    const int64_t n_seqs = static_cast<int64_t>(c.lens.size()), tokens = cu.back();
    // One row past the last token's (never pooled; x exists where every sequence is empty).
    const std::vector<float> x = RandomVector((tokens + 1) * c.dim, 600 + i);
    std::string lens;
    for (int32_t len : c.lens) lens += " " + std::to_string(len);
    for (PoolingType type : {PoolingType::kMean, PoolingType::kCls, PoolingType::kLast}) {
      for (bool normalize : {false, true}) {
        std::vector<float> want(n_seqs * c.dim);
        const Status st =
            pool_ref({x.data(), cu.data(), want.data(), n_seqs, c.dim, type, normalize});
        ASSERT_TRUE(st.ok()) << st.ToString();
        const std::string what = std::string("pool ") + PoolingName(type) +
                                 (normalize ? " normalized" : "") + " | rows of " +
                                 std::to_string(c.dim) + ", lengths" + lens;
        for (const OpTarget* tg : TargetsFor(targets, DType::kF32, (tokens + 1) * c.dim)) {
          OpBuffers b(*tg->backend);
          float* out =
              static_cast<float*>(b.Out("out", DType::kF32, want, BoundFor({DType::kF32})));
          RunOp(*tg, b, what, PoolParams{b.In(x), b.In(cu), out, n_seqs, c.dim, type, normalize},
                &Backend::Pool);
        }
      }
    }
  }
}

}  // namespace forge::testing
