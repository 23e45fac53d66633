// PlanShard and ShardWeights.
#include "model/model_shard.h"

#include <cstring>
#include <string>
#include <tuple>

namespace forge {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// Whether column `c` of a row of `type` starts a block.
bool OnBlockBoundary(GgmlType type, int64_t c) { return c % GetTypeTraits(type).block_elems == 0; }

Status CheckColumnSplit(const WeightView& w, const std::string& what, int64_t begin, int64_t n,
                        int ranks) {
  if (OnBlockBoundary(w.type, begin) && OnBlockBoundary(w.type, begin + n)) return Status::Ok();
  return InvalidArgumentError("tensor parallelism over " + Str(ranks) + " devices: " + what + " (" +
                              std::string(TypeName(w.type)) + ", blocks of " +
                              Str(GetTypeTraits(w.type).block_elems) +
                              ") would be split at column " + Str(begin) + " or " + Str(begin + n) +
                              ", not on a block boundary");
}

// Columns [begin, begin + n) of every row, copied.
WeightView ColumnSlice(const WeightView& w, int64_t begin, int64_t n,
                       std::vector<std::vector<uint8_t>>* owned) {
  const TypeTraits& t = GetTypeTraits(w.type);
  const int64_t off = begin / t.block_elems * t.block_bytes;
  const int64_t row_bytes = n / t.block_elems * t.block_bytes;
  std::vector<uint8_t>& buf = owned->emplace_back(static_cast<size_t>(w.rows * row_bytes));
  for (int64_t r = 0; r < w.rows; ++r) {
    std::memcpy(buf.data() + r * row_bytes, w.row(r) + off, static_cast<size_t>(row_bytes));
  }
  WeightView s = w;
  s.cols = n;
  s.row_bytes = row_bytes;
  s.data = buf.data();
  return s;
}

VectorView Slice(const VectorView& v, int64_t begin, int64_t n) {
  if (v.data == nullptr) return v;
  return VectorView{v.data + begin, n};
}

}  // namespace

StatusOr<ShardPlan> PlanShard(const ModelConfig& c, const ModelWeights& host, int rank, int n) {
  if (n < 1 || rank < 0 || rank >= n) {
    return InvalidArgumentError("tensor parallelism: rank " + Str(rank) + " of " + Str(n));
  }
  const std::string over = "tensor parallelism over " + Str(n) + " devices: ";
  if (c.n_head % n != 0) {
    return InvalidArgumentError(over + "the model's " + Str(c.n_head) +
                                " attention heads do not divide by " + Str(n));
  }
  ShardPlan p;
  p.rank = rank;
  p.n = n;
  p.n_head = c.n_head / n;
  p.head_begin = rank * p.n_head;
  if (c.n_head_kv % n == 0) {
    p.n_head_kv = c.n_head_kv / n;
    p.kv_head_begin = rank * p.n_head_kv;
  } else if (n % c.n_head_kv == 0) {  // each KV head held by n / n_head_kv ranks
    p.n_head_kv = 1;
    p.kv_head_begin = rank / (n / c.n_head_kv);
  } else {
    return InvalidArgumentError(over + "the model's " + Str(c.n_head_kv) +
                                " KV heads neither divide by " + Str(n) + " nor divide it");
  }
  if (c.n_ff % n != 0) {
    return InvalidArgumentError(over + "the FFN's " + Str(c.n_ff) +
                                " hidden features do not divide by " + Str(n));
  }
  p.n_ff = c.n_ff / n;
  p.ff_begin = rank * p.n_ff;
  // Each expert's features (and the shared expert's) are split as the dense FFN's are.
  for (auto [what, width, part, begin] :
       {std::tuple{"expert", c.n_ff_exp, &p.n_ff_exp, &p.ff_exp_begin},
        std::tuple{"shared expert", c.n_ff_shexp, &p.n_ff_shexp, &p.ff_shexp_begin}}) {
    if (width % n != 0) {
      return InvalidArgumentError(over + "each " + what + "'s " + Str(width) +
                                  " hidden features do not divide by " + Str(n));
    }
    *part = width / n;
    *begin = rank * *part;
  }
  p.vocab_pad = (c.n_vocab + n - 1) / n;
  p.vocab_begin = std::min<int64_t>(rank * p.vocab_pad, c.n_vocab);
  p.n_vocab = std::min<int64_t>(p.vocab_pad, c.n_vocab - p.vocab_begin);
  if (p.n_vocab <= 0) {
    return InvalidArgumentError(over + "a vocabulary of " + Str(c.n_vocab) + " leaves rank " +
                                Str(rank) + " no rows");
  }
  for (size_t l = 0; l < host.layers.size(); ++l) {
    const LayerWeights& w = host.layers[l];
    const std::string blk = "blk." + Str(static_cast<int64_t>(l)) + ".";
    RETURN_IF_ERROR(CheckColumnSplit(w.wo, blk + "attn_output", p.head_begin * c.head_dim,
                                     p.n_head * c.head_dim, n));
    if (w.w_down.data != nullptr) {
      RETURN_IF_ERROR(CheckColumnSplit(w.w_down, blk + "ffn_down", p.ff_begin, p.n_ff, n));
    }
    if (!w.down_exps.empty()) {
      RETURN_IF_ERROR(CheckColumnSplit(w.down_exps[0], blk + "ffn_down_exps", p.ff_exp_begin,
                                       p.n_ff_exp, n));
    }
    if (w.shexp_down.data != nullptr) {
      RETURN_IF_ERROR(CheckColumnSplit(w.shexp_down, blk + "ffn_down_shexp", p.ff_shexp_begin,
                                       p.n_ff_shexp, n));
    }
  }
  return p;
}

StatusOr<WeightShard> ShardWeights(const ModelConfig& c, const ModelWeights& host,
                                   const ShardPlan& p) {
  WeightShard s;
  s.config = c;
  s.config.n_head = p.n_head;
  s.config.n_head_kv = p.n_head_kv;
  s.config.n_ff = p.n_ff;
  s.config.n_ff_exp = p.n_ff_exp;
  s.config.n_ff_shexp = p.n_ff_shexp;
  s.config.n_vocab = p.n_vocab;
  // Every layer's are the shard's too (a model's layers are alike: CheckUniformLayers).
  for (LayerConfig& l : s.config.layers) {
    l.n_head = p.n_head;
    l.n_head_kv = p.n_head_kv;
    l.n_ff = p.n_ff;
  }
  if (p.n == 1) {
    s.weights = host;
    return s;
  }
  const int64_t hd = c.head_dim;
  const int64_t q0 = p.head_begin * hd, nq = p.n_head * hd;
  const int64_t k0 = p.kv_head_begin * hd, nk = p.n_head_kv * hd;
  ModelWeights& w = s.weights;
  w.token_embd = host.token_embd.Rows(p.vocab_begin, p.n_vocab);
  w.output = host.output.Rows(p.vocab_begin, p.n_vocab);
  w.output_norm = host.output_norm;
  w.rope_freqs = host.rope_freqs;
  for (const LayerWeights& h : host.layers) {
    LayerWeights l;
    l.attn_norm = h.attn_norm;
    l.ffn_norm = h.ffn_norm;
    l.attn_post_norm = h.attn_post_norm;
    l.ffn_post_norm = h.ffn_post_norm;
    l.q_norm = h.q_norm;
    l.k_norm = h.k_norm;
    l.wq = h.wq.Rows(q0, nq);
    l.wk = h.wk.Rows(k0, nk);
    l.wv = h.wv.Rows(k0, nk);
    l.bq = Slice(h.bq, q0, nq);
    l.bk = Slice(h.bk, k0, nk);
    l.bv = Slice(h.bv, k0, nk);
    l.wo = ColumnSlice(h.wo, q0, nq, &s.owned);
    l.w_gate = h.w_gate.Rows(p.ff_begin, p.n_ff);
    l.w_up = h.w_up.Rows(p.ff_begin, p.n_ff);
    if (h.w_down.data != nullptr) l.w_down = ColumnSlice(h.w_down, p.ff_begin, p.n_ff, &s.owned);
    // Experts: each one's slice, prepared on its own (the stacked tensors whole are not).
    l.router = h.router;
    for (size_t e = 0; e < h.down_exps.size(); ++e) {
      l.gate_exps.push_back(h.gate_exps[e].Rows(p.ff_exp_begin, p.n_ff_exp));
      l.up_exps.push_back(h.up_exps[e].Rows(p.ff_exp_begin, p.n_ff_exp));
      l.down_exps.push_back(ColumnSlice(h.down_exps[e], p.ff_exp_begin, p.n_ff_exp, &s.owned));
    }
    if (h.shexp_down.data != nullptr) {
      l.shexp_gate = h.shexp_gate.Rows(p.ff_shexp_begin, p.n_ff_shexp);
      l.shexp_up = h.shexp_up.Rows(p.ff_shexp_begin, p.n_ff_shexp);
      l.shexp_down = ColumnSlice(h.shexp_down, p.ff_shexp_begin, p.n_ff_shexp, &s.owned);
      l.shexp_router = h.shexp_router;
    }
    w.layers.push_back(l);
  }
  return s;
}

}  // namespace forge
