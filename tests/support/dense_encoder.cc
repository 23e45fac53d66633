// DenseEncode and DensePool.
#include "support/dense_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/dense_tensors.h"

namespace forge::testing {
namespace {

using Vec = std::vector<double>;

using Matrix = DenseMatrix;

Matrix Tensor(const GgufFile& f, const std::string& name, bool required = true) {
  return DenseTensor(f, name, required);
}

void AddTo(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] += b[i];
}

Vec LayerNorm(const Vec& x, const Vec& w, const Vec& b, double eps) {
  const double n = static_cast<double>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + (b.empty() ? 0.0 : b[i]);
  }
  return y;
}

// NeoX rotation of every head of v at position pos (pairs i, i + d/2), base `theta`.
void RopeNeox(Vec& v, int64_t heads, int64_t d, int64_t pos, double theta) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = pos * std::pow(theta, -2.0 * i / d);
      double& a = v[h * d + i];
      double& b = v[h * d + i + d / 2];
      const double ra = a * std::cos(angle) - b * std::sin(angle);
      const double rb = a * std::sin(angle) + b * std::cos(angle);
      a = ra;
      b = rb;
    }
  }
}

}  // namespace

std::vector<double> DenseEncode(const GgufFile& f, const std::vector<int32_t>& ids) {
  const std::string arch = *f.GetString("general.architecture");
  const std::string a = arch + ".";
  const int64_t E = *f.GetU32(a + "embedding_length"), H = *f.GetU32(a + "attention.head_count");
  const int64_t KV = *f.GetU32(a + "attention.head_count_kv");
  const int64_t L = *f.GetU32(a + "block_count");
  const double eps = *f.GetF32(a + "attention.layer_norm_epsilon");
  const double theta = *f.GetF32Or(a + "rope.freq_base", 10000.0f);
  const int64_t D = E / H, T = static_cast<int64_t>(ids.size());
  const Matrix embd = Tensor(f, "token_embd.weight");
  const Matrix pos = Tensor(f, "position_embd.weight", false);
  const Matrix types = Tensor(f, "token_types.weight", false);
  std::vector<Vec> x(T);
  for (int64_t t = 0; t < T; ++t) {
    x[t].assign(embd.v.begin() + ids[t] * E, embd.v.begin() + (ids[t] + 1) * E);
    if (!pos.empty()) AddTo(x[t], Vec(pos.v.begin() + t * E, pos.v.begin() + (t + 1) * E));
    if (!types.empty()) AddTo(x[t], Vec(types.v.begin(), types.v.begin() + E));
    x[t] = LayerNorm(x[t], Tensor(f, "token_embd_norm.weight").v,
                     Tensor(f, "token_embd_norm.bias").v, eps);
  }
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto vec = [&](const std::string& n) { return Tensor(f, p + n, false).v; };
    std::vector<Vec> q(T), k(T), v(T);
    const Matrix qkv = Tensor(f, p + "attn_qkv.weight", false);
    for (int64_t t = 0; t < T; ++t) {
      if (!qkv.empty()) {
        const Vec all = qkv.MatVec(x[t]);
        q[t].assign(all.begin(), all.begin() + H * D);
        k[t].assign(all.begin() + H * D, all.begin() + (H + KV) * D);
        v[t].assign(all.begin() + (H + KV) * D, all.end());
      } else {
        q[t] = Tensor(f, p + "attn_q.weight").MatVec(x[t]);
        k[t] = Tensor(f, p + "attn_k.weight").MatVec(x[t]);
        v[t] = Tensor(f, p + "attn_v.weight").MatVec(x[t]);
        AddTo(q[t], vec("attn_q.bias"));
        AddTo(k[t], vec("attn_k.bias"));
        AddTo(v[t], vec("attn_v.bias"));
      }
      if (pos.empty()) {  // rotary positions
        RopeNeox(q[t], H, D, t, theta);
        RopeNeox(k[t], KV, D, t, theta);
      }
    }
    const Matrix wo = Tensor(f, p + "attn_output.weight");
    const Matrix gate = Tensor(f, p + "ffn_gate.weight", false);
    const Matrix up = Tensor(f, p + "ffn_up.weight"), down = Tensor(f, p + "ffn_down.weight");
    std::vector<Vec> next(T);
    for (int64_t t = 0; t < T; ++t) {
      Vec attn(H * D, 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / KV);
        Vec s(T);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {  // every key of the sequence
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[t][h * D + d] * k[j][g * D + d];
          s[j] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = 0; j < T; ++j) {
          for (int64_t d = 0; d < D; ++d) attn[h * D + d] += s[j] / sum * v[j][g * D + d];
        }
      }
      Vec o = wo.MatVec(attn);
      AddTo(o, vec("attn_output.bias"));
      AddTo(o, x[t]);
      const Vec h = LayerNorm(o, vec("attn_output_norm.weight"), vec("attn_output_norm.bias"), eps);
      Vec u = up.MatVec(h);
      AddTo(u, vec("ffn_up.bias"));
      if (gate.empty()) {  // exact GELU
        for (double& z : u) z = 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
      } else {  // SwiGLU
        const Vec g = gate.MatVec(h);
        for (size_t i = 0; i < u.size(); ++i) u[i] *= g[i] / (1 + std::exp(-g[i]));
      }
      Vec y = down.MatVec(u);
      AddTo(y, vec("ffn_down.bias"));
      AddTo(y, h);
      next[t] = LayerNorm(y, vec("layer_output_norm.weight"), vec("layer_output_norm.bias"), eps);
    }
    x = std::move(next);
  }
  std::vector<double> out;
  for (const Vec& r : x) out.insert(out.end(), r.begin(), r.end());
  return out;
}

std::vector<double> DensePool(const std::vector<double>& hidden, int64_t dim, PoolingType type) {
  const int64_t n = static_cast<int64_t>(hidden.size()) / dim;
  Vec out(dim, 0.0);
  if (type == PoolingType::kMean) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < dim; ++i) out[i] += hidden[t * dim + i] / n;
    }
  } else {
    const int64_t t = type == PoolingType::kCls ? 0 : n - 1;
    out.assign(hidden.begin() + t * dim, hidden.begin() + (t + 1) * dim);
  }
  double sq = 0;
  for (double v : out) sq += v * v;
  for (double& v : out) v /= std::sqrt(sq);
  return out;
}

}  // namespace forge::testing
