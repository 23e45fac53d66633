// The op harness's runners of the ops around the matmuls and attention (op_runner.h): each op's
// dtype forms on a target (inputs in the activation dtype or in F32 as the model passes them,
// outputs in the dtype or F32), the host reference on the same rounded values.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/cuda/quant_test_data.h"
#include "support/op_buffers.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

namespace forge::testing {
namespace {

std::string Shape(int64_t rows, int64_t cols) {
  return std::to_string(rows) + " x " + std::to_string(cols);
}

// Distinct slots ((7 i + 3) mod num_slots; num_slots not a multiple of 7) for n tokens, -1 for
// every fifth token from the third where `skip`.
std::vector<int32_t> Slots(int64_t n, int64_t num_slots, bool skip) {
  std::vector<int32_t> s(n);
  for (int64_t i = 0; i < n; ++i) {
    s[i] = skip && i % 5 == 2 ? -1 : static_cast<int32_t>((7 * i + 3) % num_slots);
  }
  return s;
}

// A pointer `elems` elements of t past p.
void* Offset(void* p, int64_t elems, DType t) {
  return static_cast<char*>(p) + elems * static_cast<int64_t>(DTypeSize(t));
}

}  // namespace

void RunEmbeddingCases(std::span<OpTarget> targets) {
  const std::vector<EmbeddingCase>& cases = EmbeddingCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const EmbeddingCase& c = cases[i];
    const QuantMatrix table = IsBlockFormat(c.type)
                                  ? RandomBlocks(c.type, c.rows, c.dim, 10 + i)
                                  : QuantizedRandom(c.type, c.rows, c.dim, 10 + i);
    const WeightView stored{c.type, c.rows, c.dim, table.row_bytes, table.bytes.data()};
    const int64_t n = static_cast<int64_t>(c.ids.size());
    ForEachDType(targets, n * c.dim, [&](DType t, std::span<const OpTarget* const> ts) {
      // A block-format table is kept as stored whatever the activations; others become t.
      if (IsBlockFormat(c.type) && t != DType::kF32) return;
      const std::vector<float> held =
          IsBlockFormat(c.type) ? table.values : Rounded(table.values, t);
      std::vector<float> want(n * c.dim);
      ASSERT_TRUE(embedding_ref({F32View(held, c.rows, c.dim), c.ids.data(), n, want.data(),
                                 c.row_offset, c.n_vocab, c.scale})
                      .ok());
      const std::string what = std::string("embedding table in ") + DTypeName(t) + " | " +
                               std::string(TypeName(c.type)) + " [" + Shape(c.rows, c.dim) + "] " +
                               std::to_string(n) + " ids, rows from " +
                               std::to_string(c.row_offset) + " of " +
                               std::to_string(c.n_vocab ? c.n_vocab : c.rows) +
                               (c.scale != 1.0f ? ", scaled" : "");
      for (const OpTarget* tg : ts) {
        auto dt = tg->backend->PrepareWeight(stored, t);
        ASSERT_TRUE(dt.ok()) << what << ": " << dt.status().ToString();
        OpBuffers b(*tg->backend);
        float* out = static_cast<float*>(b.Out("out", DType::kF32, want, 0));
        RunOp(*tg, b, what,
              EmbeddingParams{*dt, b.In(c.ids), n, out, c.row_offset, c.n_vocab, c.scale},
              &Backend::Embedding);
      }
    });
  }
}

// Out of place: the F32 residual normalized into t; in place: rows of t (the q/k norm).
void RunRmsNormCases(std::span<OpTarget> targets) {
  const std::vector<NormCase>& cases = NormCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const NormCase& c = cases[i];
    const std::vector<float> x = RandomVector(c.rows * c.dim, 20 + i), w = RandomVector(c.dim, 1);
    ForEachDType(targets, c.rows * c.dim, [&](DType t, std::span<const OpTarget* const> ts) {
      for (bool in_place : {false, true}) {
        const DType xt = in_place ? t : DType::kF32;
        const std::vector<float> xv = Rounded(x, xt);
        std::vector<float> want(xv.size());
        ASSERT_TRUE(rmsnorm_ref({xv.data(), w.data(), want.data(), c.rows, c.dim, 1e-5f}).ok());
        const std::string what = std::string("rmsnorm x ") + DTypeName(xt) + " out " +
                                 DTypeName(t) + (in_place ? " in place" : "") + " | " +
                                 Shape(c.rows, c.dim);
        for (const OpTarget* tg : ts) {
          OpBuffers b(*tg->backend);
          void* out = in_place ? b.InOut("x", t, xv, want, BoundFor({t}))
                               : b.Out("out", t, want, BoundFor({t}));
          const RmsNormParams p{
              in_place ? out : b.In(xv, xt), b.In(w), out, c.rows, c.dim, 1e-5f, xt, t};
          RunOp(*tg, b, what, p, &Backend::RmsNorm);
        }
      }
    });
  }
}

// The F32 residual updated exactly; delta in t or F32 (as the model's matmuls write it), out in t
// or F32.
void RunAddRmsNormCases(std::span<OpTarget> targets) {
  const std::vector<NormCase>& cases = NormCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const NormCase& c = cases[i];
    const std::vector<float> x = RandomVector(c.rows * c.dim, 40 + i), w = RandomVector(c.dim, 1);
    const std::vector<float> delta = RandomVector(c.rows * c.dim, 60 + i);
    ForEachDType(targets, c.rows * c.dim, [&](DType t, std::span<const OpTarget* const> ts) {
      std::vector<std::pair<DType, DType>> forms = {{DType::kF32, DType::kF32}};
      if (t != DType::kF32) forms.insert(forms.begin(), {{t, t}, {DType::kF32, t}});
      for (auto [dt, ot] : forms) {
        const std::vector<float> dv = Rounded(delta, dt);
        std::vector<float> res = x, want(x.size());
        ASSERT_TRUE(
            add_rmsnorm_ref({res.data(), dv.data(), w.data(), want.data(), c.rows, c.dim, 1e-5f})
                .ok());
        const std::string what = std::string("add_rmsnorm delta ") + DTypeName(dt) + " out " +
                                 DTypeName(ot) + " | " + Shape(c.rows, c.dim);
        for (const OpTarget* tg : ts) {
          OpBuffers b(*tg->backend);
          float* r = static_cast<float*>(b.InOut("residual", DType::kF32, x, res, 0));
          void* out = b.Out("out", ot, want, BoundFor({dt, ot}));
          const AddRmsNormParams p{r, b.In(dv, dt), b.In(w), out, c.rows, c.dim, 1e-5f, dt, ot};
          RunOp(*tg, b, what, p, &Backend::AddRmsNorm);
        }
      }
    });
  }
}

void RunRopeCases(std::span<OpTarget> targets) {
  const std::vector<RopeCase>& cases = RopeCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const RopeCase& c = cases[i];
    const int64_t stride = c.n_heads * c.head_dim + c.token_pad;
    const int64_t dims = c.rope_dims ? c.rope_dims : c.head_dim;
    std::vector<int32_t> pos(c.n_tokens);
    for (int64_t t = 0; t < c.n_tokens; ++t) pos[t] = static_cast<int32_t>(t * 37 + 5);
    std::vector<float> factors(dims / 2);
    for (size_t f = 0; f < factors.size(); ++f) factors[f] = 1.0f + 0.25f * f;
    const std::string what_case =
        std::string(c.style == RopeStyle::kNeox ? "neox" : "adjacent") + " " +
        std::to_string(c.n_tokens) + " tokens x " + std::to_string(c.n_heads) + " heads of " +
        std::to_string(c.head_dim) + ", " + std::to_string(dims) + " rotated, stride " +
        std::to_string(stride) + (c.freq_factors ? ", factors" : "") + ", scale " +
        std::to_string(c.freq_scale);
    ForEachDType(targets, c.n_tokens * stride, [&](DType t, std::span<const OpTarget* const> ts) {
      const std::vector<float> x = Values(c.n_tokens * stride, 80 + i, t);
      std::vector<float> want = x;
      RopeParams p{want.data(),  pos.data(),
                   c.n_tokens,   c.n_heads,
                   c.head_dim,   c.token_pad ? stride : 0,
                   dims,         c.theta,
                   c.freq_scale, c.freq_factors ? factors.data() : nullptr,
                   c.style};
      ASSERT_TRUE(rope_ref(p).ok());
      const std::string what = std::string("rope x ") + DTypeName(t) + " | " + what_case;
      for (const OpTarget* tg : ts) {
        OpBuffers b(*tg->backend);
        p.x = b.InOut("x", t, x, want, BoundFor({t}));
        p.positions = b.In(pos);
        p.freq_factors = c.freq_factors ? b.In(factors) : nullptr;
        p.dtype = t;
        RunOp(*tg, b, what, p, &Backend::Rope);
      }
    });
  }
}

// New K/V in t or F32 (as the model passes them) into a cache of t: exact.
void RunKvWriteCases(std::span<OpTarget> targets) {
  const std::vector<KvWriteCase>& cases = KvWriteCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const KvWriteCase& c = cases[i];
    const int64_t row = c.n_kv_heads * c.head_dim, stride = row + c.src_pad;
    const std::vector<int32_t> slots = Slots(c.n_tokens, c.num_slots, c.skip);
    const std::string what_case = std::to_string(c.n_tokens) + " tokens of " +
                                  Shape(c.n_kv_heads, c.head_dim) + " into " +
                                  std::to_string(c.num_slots) + " slots, rows of " +
                                  std::to_string(stride) + (c.skip ? ", some skipped" : "");
    ForEachDType(targets, c.num_slots * row, [&](DType t, std::span<const OpTarget* const> ts) {
      for (DType st : Distinct({t, DType::kF32})) {
        const std::vector<float> kc = Values(c.num_slots * row, 100 + i, t);
        const std::vector<float> vc = Values(c.num_slots * row, 120 + i, t);
        const std::vector<float> k = Values(c.n_tokens * stride, 140 + i, st);
        const std::vector<float> v = Values(c.n_tokens * stride, 160 + i, st);
        std::vector<float> hk = kc, hv = vc;
        KvWriteParams p{k.data(),     v.data(),   0,           0,         slots.data(), c.n_tokens,
                        c.n_kv_heads, c.head_dim, c.num_slots, hk.data(), hv.data()};
        p.k_stride = p.v_stride = c.src_pad ? stride : 0;
        ASSERT_TRUE(kv_write_ref(p).ok());
        hk = Rounded(hk, t);  // what the cache holds
        hv = Rounded(hv, t);
        const std::string what = std::string("kv_write new ") + DTypeName(st) + " cache " +
                                 DTypeName(t) + " | " + what_case;
        for (const OpTarget* tg : ts) {
          OpBuffers b(*tg->backend);
          p.k = b.In(k, st);
          p.v = b.In(v, st);
          p.slot_mapping = b.In(slots);
          p.k_cache = b.InOut("k_cache", t, kc, hk, 0);
          p.v_cache = b.InOut("v_cache", t, vc, hv, 0);
          p.dtype = t;
          p.src_type = st;
          RunOp(*tg, b, what, p, &Backend::KvWrite);
        }
      }
    });
  }
}

// The model's layout: q, k, v rows of one [T, q | k | v] buffer (F32, or t), a cache of t; q and
// k rotated within the bound, the K cache within it (a rotated value may round either way), the
// V cache exactly.
void RunRopeKvWriteCases(std::span<OpTarget> targets) {
  const std::vector<RopeKvWriteCase>& cases = RopeKvWriteCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const RopeKvWriteCase& c = cases[i];
    const int64_t H = c.n_heads, KV = c.n_kv_heads, D = c.head_dim, T = c.n_tokens;
    const int64_t row = (H + 2 * KV) * D, dims = c.rope_dims ? c.rope_dims : D;
    const int64_t num_slots = (T + 9) % 7 == 0 ? T + 10 : T + 9;
    std::vector<int32_t> pos(T), slots = Slots(T, num_slots, false);
    for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>(t * 1013 + 7);
    slots[std::min<int64_t>(5, T - 1)] = -1;
    std::vector<float> factors(dims / 2);
    for (size_t f = 0; f < factors.size(); ++f) factors[f] = 1.0f + 0.1f * f;
    auto params = [&](void* qkv, DType qt, void* kc, void* vc, DType ct, const int32_t* ps,
                      const int32_t* sl, const float* ff) {
      RopeKvWriteParams r;
      r.q = {qkv, ps, T, H, D, row, dims, 500000.0f, 1.0f, ff, c.style, qt};
      r.k = r.q;
      r.k.x = Offset(qkv, H * D, qt);
      r.k.n_heads = KV;
      r.kv = {r.k.x, Offset(qkv, (H + KV) * D, qt), row, row, sl, T, KV, D, num_slots, kc, vc, ct,
              qt};
      return r;
    };
    const std::string what_case = std::string(c.style == RopeStyle::kNeox ? "neox " : "adjacent ") +
                                  std::to_string(T) + " tokens, heads " + std::to_string(H) +
                                  " / " + std::to_string(KV) + " of " + std::to_string(D) + ", " +
                                  std::to_string(dims) + " rotated";
    ForEachDType(targets, T * row, [&](DType t, std::span<const OpTarget* const> ts) {
      for (DType qt : Distinct({DType::kF32, t})) {
        const std::vector<float> qkv = Values(T * row, 180 + i, qt);
        const std::vector<float> kc = Values(num_slots * KV * D, 200 + i, t);
        const std::vector<float> vc = Values(num_slots * KV * D, 220 + i, t);
        std::vector<float> hq = qkv, hk = kc, hv = vc;
        ASSERT_TRUE(rope_kv_write_ref(params(hq.data(), DType::kF32, hk.data(), hv.data(),
                                             DType::kF32, pos.data(), slots.data(), factors.data()))
                        .ok());
        const std::string what = std::string("rope_kv_write qkv ") + DTypeName(qt) + " cache " +
                                 DTypeName(t) + " | " + what_case;
        for (const OpTarget* tg : ts) {
          OpBuffers b(*tg->backend);
          void* dq = b.InOut("qkv", qt, qkv, hq, BoundFor({qt}));
          void* dk = b.InOut("k_cache", t, kc, Rounded(hk, t), BoundFor({qt, t}));
          void* dv = b.InOut("v_cache", t, vc, Rounded(hv, t), 0);
          RunOp(*tg, b, what, params(dq, qt, dk, dv, t, b.In(pos), b.In(slots), b.In(factors)),
                &Backend::RopeKvWrite);
        }
      }
    });
  }
}

// gate and up in t or F32 (the model feeds it F32 products), out in t; gated or not.
void RunSwigluCases(std::span<OpTarget> targets) {
  const std::vector<SwigluCase>& cases = SwigluCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const SwigluCase& c = cases[i];
    const int64_t T = c.n_tokens, dim = c.dim;
    const char* act = c.act == GluAct::kGeluTanh  ? " gelu"
                      : c.act == GluAct::kGeluErf ? " gelu_erf"
                                                  : " silu";
    ForEachDType(targets, T * dim, [&](DType t, std::span<const OpTarget* const> ts) {
      for (DType it : Distinct({t, DType::kF32})) {
        const std::vector<float> g = Values(T * dim, 240 + i, it), u = Values(T * dim, 260 + i, it);
        std::vector<float> want(T * dim);
        SwigluParams ref{g.data(), c.gated ? u.data() : nullptr, want.data(), T, dim, 0, 0};
        ref.act = c.act;
        ASSERT_TRUE(swiglu_ref(ref).ok());
        std::vector<float> both(2 * T * dim);  // row r: gate's row, then up's
        for (int64_t r = 0; r < T; ++r) {
          std::copy_n(g.begin() + r * dim, dim, both.begin() + 2 * r * dim);
          std::copy_n(u.begin() + r * dim, dim, both.begin() + (2 * r + 1) * dim);
        }
        const std::string what = std::string("swiglu in ") + DTypeName(it) + " out " +
                                 DTypeName(t) + " | " + Shape(T, dim) +
                                 (c.stacked ? " stacked" : "") + act + (c.gated ? "" : " ungated");
        for (const OpTarget* tg : ts) {
          OpBuffers b(*tg->backend);
          const int64_t stride = c.stacked ? 2 * dim : 0;
          void* gate = c.stacked ? b.In(both, it) : b.In(g, it);
          const void* up = !c.gated ? nullptr : c.stacked ? Offset(gate, dim, it) : b.In(u, it);
          SwigluParams p{
              gate, up, b.Out("out", t, want, BoundFor({it, t})), T, dim, stride, stride, it, t};
          p.act = c.act;
          RunOp(*tg, b, what, p, &Backend::Swiglu);
        }
      }
    });
  }
}

// F32 on every backend (the residual add); exact.
void RunAddCases(std::span<OpTarget> targets) {
  const std::vector<AddCase>& cases = AddCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const AddCase& c = cases[i];
    const std::vector<float> a = RandomVector(c.n, 280 + i), x = RandomVector(c.n, 300 + i);
    std::vector<float> want(c.n);
    ASSERT_TRUE(add_ref({a.data(), x.data(), want.data(), c.n}).ok());
    const std::string what =
        "add | " + std::to_string(c.n) + " elements" + (c.in_place ? " in place" : "");
    for (const OpTarget* tg : TargetsFor(targets, DType::kF32, c.n)) {
      OpBuffers b(*tg->backend);
      float* out = static_cast<float*>(c.in_place ? b.InOut("a", DType::kF32, a, want, 0)
                                                  : b.Out("out", DType::kF32, want, 0));
      const float* in_a = c.in_place ? out : static_cast<const float*>(b.In(a, DType::kF32));
      RunOp(*tg, b, what, AddParams{in_a, b.In(x), out, c.n}, &Backend::Add);
    }
  }
}

// F32 in place on every backend; the reference's tanh in double.
void RunSoftCapCases(std::span<OpTarget> targets) {
  const std::vector<SoftCapCase>& cases = SoftCapCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const SoftCapCase& c = cases[i];
    std::vector<float> x = RandomVector(c.n, 340 + i);
    for (float& v : x) v *= 3 * c.cap;  // past the cap and inside it
    std::vector<float> want = x;
    ASSERT_TRUE(softcap_ref({want.data(), c.n, c.cap}).ok());
    const std::string what = "softcap | " + std::to_string(c.n) + " at " + std::to_string(c.cap);
    for (const OpTarget* tg : TargetsFor(targets, DType::kF32, c.n)) {
      OpBuffers b(*tg->backend);
      float* io = static_cast<float*>(b.InOut("x", DType::kF32, x, want, BoundFor({DType::kF32})));
      RunOp(*tg, b, what, SoftCapParams{io, c.n, c.cap}, &Backend::SoftCap);
    }
  }
}

void RunGatherRowsCases(std::span<OpTarget> targets) {
  const std::vector<GatherRowsCase>& cases = GatherRowsCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const GatherRowsCase& c = cases[i];
    const int64_t n = static_cast<int64_t>(c.indices.size()), len = c.row_len;
    ForEachDType(targets, c.src_rows * len, [&](DType t, std::span<const OpTarget* const> ts) {
      const std::vector<float> src = Values(c.src_rows * len, 320 + i, t);
      std::vector<float> want(n * len);
      for (int64_t r = 0; r < n; ++r) {
        std::copy_n(src.begin() + c.indices[r] * len, len, want.begin() + r * len);
      }
      const std::string what = std::string("gather_rows ") + DTypeName(t) + " | " +
                               std::to_string(n) + " of " + Shape(c.src_rows, len);
      for (const OpTarget* tg : ts) {
        OpBuffers b(*tg->backend);
        void* dst = b.Out("dst", t, want, 0);
        RunOp(*tg, b, what, GatherRowsParams{b.In(src, t), b.In(c.indices), n, len, dst, t},
              &Backend::GatherRows);
      }
    });
  }
}

}  // namespace forge::testing
