// DenseForward.
#include "support/dense_forward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/dense_tensors.h"

namespace forge::testing {
namespace {

using Vec = std::vector<double>;

using Matrix = DenseMatrix;

Matrix Tensor(const GgufFile& f, const std::string& name, bool required = true) {
  return DenseTensor(f, name, required);
}

Vec RmsNorm(const Vec& x, const Vec& w, double eps, int64_t off = 0, int64_t n = -1) {
  if (n < 0) n = static_cast<int64_t>(x.size());
  Vec y = x;
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (int64_t i = 0; i < n; ++i) y[off + i] = x[off + i] * r * w[i];
  return y;
}

void Add(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

// Rope of every head of v at position pos: pairs (i, i + d/2) (NeoX) or (2i, 2i + 1).
void Rope(Vec& v, int64_t heads, int64_t d, int64_t pos, const DenseSpec::Layer& l, bool neox) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = pos * l.rope_scale * std::pow(l.rope_base, -2.0 * i / d);
      double& a = v[h * d + (neox ? i : 2 * i)];
      double& b = v[h * d + (neox ? i + d / 2 : 2 * i + 1)];
      const double ra = a * std::cos(angle) - b * std::sin(angle);
      const double rb = a * std::sin(angle) + b * std::cos(angle);
      a = ra;
      b = rb;
    }
  }
}

// act(gate) * up, then down: rows [first * .., ..) of stacked matrices when n_ff is a slice.
Vec GatedFfn(const Vec& h, const Matrix& gate, const Matrix& up, const Matrix& down, int64_t e,
             int64_t n_ff, int64_t n_embd, bool gelu) {
  const Vec g = gate.MatVec(h, e * n_ff, n_ff), u = up.MatVec(h, e * n_ff, n_ff);
  Vec act(n_ff);
  for (int64_t i = 0; i < n_ff; ++i) {
    const double z = g[i];
    const double a =
        gelu ? 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)))
             : z / (1 + std::exp(-z));
    act[i] = a * u[i];
  }
  return down.MatVec(act, e * n_embd, n_embd);
}

}  // namespace

std::vector<double> DenseForward(const GgufFile& f, const std::vector<int32_t>& ids,
                                 const DenseSpec& spec) {
  const std::string a = *f.GetString("general.architecture") + ".";
  const int64_t E = *f.GetU32(a + "embedding_length"), H = *f.GetU32(a + "attention.head_count");
  const int64_t KV = *f.GetU32(a + "attention.head_count_kv");
  const double eps = *f.GetF32Or(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  const int64_t D = E / H, T = static_cast<int64_t>(ids.size());
  const Matrix embd = Tensor(f, "token_embd.weight");
  std::vector<Vec> x(T);
  for (int64_t t = 0; t < T; ++t) {
    x[t].assign(embd.v.begin() + ids[t] * E, embd.v.begin() + (ids[t] + 1) * E);
    if (spec.embd_scale) {
      for (double& v : x[t]) v *= std::sqrt(static_cast<double>(E));
    }
  }
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto vec = [&](const std::string& n) { return Tensor(f, p + n).v; };
    const Matrix wq = Tensor(f, p + "attn_q.weight"), wk = Tensor(f, p + "attn_k.weight");
    const Matrix wv = Tensor(f, p + "attn_v.weight"), wo = Tensor(f, p + "attn_output.weight");
    const DenseSpec::Layer& kind = spec.layers[l];
    std::vector<Vec> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const Vec h = RmsNorm(x[t], vec("attn_norm.weight"), eps);
      q[t] = wq.MatVec(h);
      k[t] = wk.MatVec(h);
      v[t] = wv.MatVec(h);
      if (spec.qkv_bias) {
        Add(q[t], vec("attn_q.bias"));
        Add(k[t], vec("attn_k.bias"));
        Add(v[t], vec("attn_v.bias"));
      }
      if (spec.qk_norm) {
        for (int64_t i = 0; i < H; ++i)
          q[t] = RmsNorm(q[t], vec("attn_q_norm.weight"), eps, i * D, D);
        for (int64_t i = 0; i < KV; ++i)
          k[t] = RmsNorm(k[t], vec("attn_k_norm.weight"), eps, i * D, D);
      }
      Rope(q[t], H, D, t, kind, spec.neox);
      Rope(k[t], KV, D, t, kind, spec.neox);
    }
    // The FFN's tensors: dense, or the router and the stacked experts (and a shared expert).
    const Matrix router = Tensor(f, p + "ffn_gate_inp.weight", false);
    const bool moe = !router.empty();
    const std::string ex = moe ? "_exps" : "";
    const Matrix gate = Tensor(f, p + "ffn_gate" + ex + ".weight");
    const Matrix up = Tensor(f, p + "ffn_up" + ex + ".weight");
    const Matrix down = Tensor(f, p + "ffn_down" + ex + ".weight");
    const int64_t n_ff = moe ? gate.rows / router.rows : gate.rows;
    const Matrix sh_gate = Tensor(f, p + "ffn_gate_shexp.weight", false);
    for (int64_t t = 0; t < T; ++t) {
      Vec attn(H * D, 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / KV);
        const int64_t first = kind.window > 0 ? std::max<int64_t>(0, t - kind.window + 1) : 0;
        Vec s(t + 1, 0.0);
        double mx = -INFINITY;
        for (int64_t j = first; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[t][h * D + d] * k[j][g * D + d];
          dot /= std::sqrt(static_cast<double>(D));
          if (spec.attn_cap > 0) dot = spec.attn_cap * std::tanh(dot / spec.attn_cap);
          s[j] = dot;
          mx = std::max(mx, dot);
        }
        double sum = 0;
        for (int64_t j = first; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = first; j <= t; ++j) {
          for (int64_t d = 0; d < D; ++d) attn[h * D + d] += s[j] / sum * v[j][g * D + d];
        }
      }
      Vec o = wo.MatVec(attn);
      if (spec.post_norms) o = RmsNorm(o, vec("post_attention_norm.weight"), eps);
      Add(x[t], o);
      const Vec h = RmsNorm(x[t], vec("ffn_norm.weight"), eps);
      Vec out(E, 0.0);
      if (!moe) {
        out = GatedFfn(h, gate, up, down, 0, n_ff, E, spec.gelu);
      } else {
        const Vec logits = router.MatVec(h);
        const double m = *std::max_element(logits.begin(), logits.end());
        Vec prob(logits.size());
        double z = 0;
        for (size_t e = 0; e < prob.size(); ++e) z += (prob[e] = std::exp(logits[e] - m));
        for (double& pr : prob) pr /= z;
        std::vector<int64_t> order(prob.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t i, int64_t j) { return prob[i] > prob[j]; });
        double total = 0;
        for (int64_t s = 0; s < spec.k; ++s) total += prob[order[s]];
        for (int64_t s = 0; s < spec.k; ++s) {
          const int64_t e = order[s];
          const double w = spec.norm_topk ? prob[e] / total : prob[e];
          const Vec y = GatedFfn(h, gate, up, down, e, n_ff, E, spec.gelu);
          for (int64_t i = 0; i < E; ++i) out[i] += w * y[i];
        }
        if (!sh_gate.empty()) {
          const Matrix sh_up = Tensor(f, p + "ffn_up_shexp.weight");
          const Matrix sh_down = Tensor(f, p + "ffn_down_shexp.weight");
          const Vec y = GatedFfn(h, sh_gate, sh_up, sh_down, 0, sh_gate.rows, E, spec.gelu);
          const Matrix sh_router = Tensor(f, p + "ffn_gate_inp_shexp.weight");
          const double g = 1 / (1 + std::exp(-sh_router.MatVec(h)[0] * 1.0));
          for (int64_t i = 0; i < E; ++i) out[i] += g * y[i];
        }
      }
      if (spec.post_norms) out = RmsNorm(out, vec("post_ffw_norm.weight"), eps);
      Add(x[t], out);
    }
  }
  const Vec out_norm = Tensor(f, "output_norm.weight").v;
  const Matrix output = Tensor(f, "output.weight", false);
  std::vector<double> logits;
  for (int64_t t = 0; t < T; ++t) {
    const Vec hn = RmsNorm(x[t], out_norm, eps);
    if (spec.hidden) {
      logits.insert(logits.end(), hn.begin(), hn.end());
      continue;
    }
    Vec row = output.empty() ? embd.MatVec(hn) : output.MatVec(hn);
    for (double& z : row) {
      if (spec.final_cap > 0) z = spec.final_cap * std::tanh(z / spec.final_cap);
    }
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

ModelSpec SmallSpec(const std::string& arch, int64_t layers) {
  ModelSpec s;
  s.arch = arch;
  s.n_vocab = 300;
  s.n_embd = 64;
  s.n_layer = layers;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 96;
  s.threads = 1;
  return s;
}

std::vector<int32_t> SmallPrompt(int n) {
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 97 + 13) % 300;
  return ids;
}

void ExpectMatchesDenseForward(const std::string& path, const DenseSpec& spec, Backend& backend,
                               const std::vector<int32_t>& ids, double bound) {
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const std::vector<double> want = DenseForward(**file, ids, spec);
  auto runner = ModelRunner::Load(path, &backend);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  for (int chunk : {0, 13, 1}) {
    auto got = TeacherForcedLogits(**runner, ids, chunk);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), want.size());
    double err = 0, top = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, std::abs((*got)[i] - want[i]));
      top = std::max(top, std::abs(want[i]));
    }
    EXPECT_LE(err / top, bound) << path << " on " << backend.name() << ", chunk " << chunk;
  }
}

}  // namespace forge::testing
