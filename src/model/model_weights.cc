// BindModelWeights.
#include "model/model_weights.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace forge {
namespace {

std::string Shape(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

class Binder {
 public:
  explicit Binder(const GgufFile& f) : f_(f) {}

  bool Has(const std::string& name) const { return f_.FindTensor(name) != nullptr; }

  StatusOr<const GgufTensorInfo*> Find(const std::string& name, bool required) {
    const GgufTensorInfo* t = f_.FindTensor(name);
    if (t == nullptr && required) return NotFoundError("tensor '" + name + "' is missing");
    return t;
  }

  Status CheckShape(const GgufTensorInfo& t, const std::vector<int64_t>& expected) {
    if (t.dims != expected) {
      return InvalidArgumentError(t.name + ": shape " + t.ShapeString() + ", expected " +
                                  Shape(expected));
    }
    return Status::Ok();
  }

  // A matrix with GGUF dims [cols, rows].
  StatusOr<WeightView> Matrix(const std::string& name, int64_t rows, int64_t cols) {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, true));
    RETURN_IF_ERROR(CheckShape(*t, {cols, rows}));
    WeightView w;
    w.type = t->type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = t->n_bytes / rows;
    w.data = t->data;
    return w;
  }

  // n matrices of [rows, cols] stacked in one tensor of GGUF dims [cols, rows, n], as the one
  // matrix of n * rows rows.
  StatusOr<WeightView> Stacked(const std::string& name, int64_t rows, int64_t cols, int64_t n) {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, true));
    RETURN_IF_ERROR(CheckShape(*t, {cols, rows, n}));
    WeightView w;
    w.type = t->type;
    w.rows = n * rows;
    w.cols = cols;
    w.row_bytes = t->n_bytes / w.rows;
    w.data = t->data;
    return w;
  }

  StatusOr<VectorView> Vector(const std::string& name, int64_t n, bool required = true) {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, Find(name, required));
    if (t == nullptr) return VectorView{};
    RETURN_IF_ERROR(CheckShape(*t, {n}));
    if (t->type != GgmlType::kF32) {
      return UnimplementedError(name + ": type " + std::string(TypeName(t->type)) +
                                ", expected F32 for a norm or bias vector");
    }
    return VectorView{reinterpret_cast<const float*>(t->data), n};
  }

 private:
  const GgufFile& f_;
};

// Layer `p`'s router, experts and shared expert.
Status BindExperts(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& lw) {
  const int64_t E = c.n_expert, F = c.n_ff_exp, D = c.n_embd;
  if (b.Has(p + "ffn_gate.0.weight")) {
    return UnimplementedError(p +
                              "ffn_gate.0.weight: experts stored one tensor each (an old "
                              "Mixtral conversion); Forge reads the stacked ffn_*_exps tensors");
  }
  ASSIGN_OR_RETURN(lw.router, b.Matrix(p + "ffn_gate_inp.weight", E, D));
  ASSIGN_OR_RETURN(lw.gate_exps_all, b.Stacked(p + "ffn_gate_exps.weight", F, D, E));
  ASSIGN_OR_RETURN(lw.up_exps_all, b.Stacked(p + "ffn_up_exps.weight", F, D, E));
  ASSIGN_OR_RETURN(lw.down_exps_all, b.Stacked(p + "ffn_down_exps.weight", D, F, E));
  for (int64_t e = 0; e < E; ++e) {
    lw.gate_exps.push_back(lw.gate_exps_all.Rows(e * F, F));
    lw.up_exps.push_back(lw.up_exps_all.Rows(e * F, F));
    lw.down_exps.push_back(lw.down_exps_all.Rows(e * D, D));
  }
  if (!b.Has(p + "ffn_down_shexp.weight")) return Status::Ok();
  const int64_t S = c.n_ff_shexp > 0 ? c.n_ff_shexp : c.n_ff;
  ASSIGN_OR_RETURN(lw.shexp_gate, b.Matrix(p + "ffn_gate_shexp.weight", S, D));
  ASSIGN_OR_RETURN(lw.shexp_up, b.Matrix(p + "ffn_up_shexp.weight", S, D));
  ASSIGN_OR_RETURN(lw.shexp_down, b.Matrix(p + "ffn_down_shexp.weight", D, S));
  ASSIGN_OR_RETURN(VectorView g, b.Vector(p + "ffn_gate_inp_shexp.weight", D, false));
  if (g.data != nullptr) {
    lw.shexp_router =
        WeightView{GgmlType::kF32, 1, D, D * 4, reinterpret_cast<const uint8_t*>(g.data)};
  }
  return Status::Ok();
}

// An encoder's tensors (BERT's names): no output head or final norm; every layer's matrices with
// their biases (optional, as converters write them) and two LayerNorms.
StatusOr<ModelWeights> BindEncoder(Binder& b, const ModelConfig& c) {
  ModelWeights w;
  const int64_t D = c.n_embd;
  ASSIGN_OR_RETURN(w.token_embd, b.Matrix("token_embd.weight", c.n_vocab, D));
  if (c.rope_dims == 0) {
    ASSIGN_OR_RETURN(w.position_embd, b.Matrix("position_embd.weight", c.n_ctx_train, D));
  }
  if (b.Has("token_types.weight")) {
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, b.Find("token_types.weight", true));
    if (t->dims.size() != 2 || t->dims[0] != D || t->dims[1] < 1) {
      return InvalidArgumentError("token_types.weight: shape " + t->ShapeString() + ", expected [" +
                                  std::to_string(D) + ", n_types]");
    }
    if (t->type != GgmlType::kF32) {
      return UnimplementedError("token_types.weight: type " + std::string(TypeName(t->type)) +
                                ", expected F32");
    }
    w.token_type0 = {reinterpret_cast<const float*>(t->data), D};  // type 0: every token's
  }
  ASSIGN_OR_RETURN(w.embd_norm, b.Vector("token_embd_norm.weight", D));
  ASSIGN_OR_RETURN(w.embd_norm_b, b.Vector("token_embd_norm.bias", D));
  const int64_t q = c.q_dim(), kv = c.kv_dim();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t F = c.layers[l].n_ff;
    LayerWeights lw;
    if (b.Has(p + "attn_qkv.weight")) {
      ASSIGN_OR_RETURN(WeightView qkv, b.Matrix(p + "attn_qkv.weight", q + 2 * kv, D));
      lw.wq = qkv.Rows(0, q);
      lw.wk = qkv.Rows(q, kv);
      lw.wv = qkv.Rows(q + kv, kv);
      ASSIGN_OR_RETURN(VectorView bqkv, b.Vector(p + "attn_qkv.bias", q + 2 * kv, false));
      if (bqkv.data != nullptr) {
        lw.bq = {bqkv.data, q};
        lw.bk = {bqkv.data + q, kv};
        lw.bv = {bqkv.data + q + kv, kv};
      }
    } else {
      ASSIGN_OR_RETURN(lw.wq, b.Matrix(p + "attn_q.weight", q, D));
      ASSIGN_OR_RETURN(lw.wk, b.Matrix(p + "attn_k.weight", kv, D));
      ASSIGN_OR_RETURN(lw.wv, b.Matrix(p + "attn_v.weight", kv, D));
      ASSIGN_OR_RETURN(lw.bq, b.Vector(p + "attn_q.bias", q, false));
      ASSIGN_OR_RETURN(lw.bk, b.Vector(p + "attn_k.bias", kv, false));
      ASSIGN_OR_RETURN(lw.bv, b.Vector(p + "attn_v.bias", kv, false));
    }
    ASSIGN_OR_RETURN(lw.wo, b.Matrix(p + "attn_output.weight", D, q));
    ASSIGN_OR_RETURN(lw.bo, b.Vector(p + "attn_output.bias", D, false));
    ASSIGN_OR_RETURN(lw.attn_out_norm, b.Vector(p + "attn_output_norm.weight", D));
    ASSIGN_OR_RETURN(lw.attn_out_norm_b, b.Vector(p + "attn_output_norm.bias", D));
    if (b.Has(p + "ffn_gate.weight")) {
      ASSIGN_OR_RETURN(lw.w_gate, b.Matrix(p + "ffn_gate.weight", F, D));
    }
    ASSIGN_OR_RETURN(lw.w_up, b.Matrix(p + "ffn_up.weight", F, D));
    ASSIGN_OR_RETURN(lw.b_up, b.Vector(p + "ffn_up.bias", F, false));
    ASSIGN_OR_RETURN(lw.w_down, b.Matrix(p + "ffn_down.weight", D, F));
    ASSIGN_OR_RETURN(lw.b_down, b.Vector(p + "ffn_down.bias", D, false));
    ASSIGN_OR_RETURN(lw.out_norm, b.Vector(p + "layer_output_norm.weight", D));
    ASSIGN_OR_RETURN(lw.out_norm_b, b.Vector(p + "layer_output_norm.bias", D));
    w.layers.push_back(lw);
  }
  return w;
}

}  // namespace

StatusOr<ModelWeights> BindModelWeights(const GgufFile& f, const ModelConfig& c) {
  Binder b(f);
  if (c.encoder) return BindEncoder(b, c);
  ModelWeights w;
  ASSIGN_OR_RETURN(w.token_embd, b.Matrix("token_embd.weight", c.n_vocab, c.n_embd));
  ASSIGN_OR_RETURN(w.output_norm, b.Vector("output_norm.weight", c.n_embd));
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    ASSIGN_OR_RETURN(w.output, b.Matrix("output.weight", c.n_vocab, c.n_embd));
  }
  if (c.rope_freq_factors) {
    ASSIGN_OR_RETURN(w.rope_freqs, b.Vector("rope_freqs.weight", c.rope_dims / 2));
  }
  if (f.FindTensor("rope_factors_long.weight") != nullptr) {
    return UnimplementedError("LongRoPE (rope_factors_long.weight) is not supported yet");
  }
  const int64_t q = c.q_dim(), kv = c.kv_dim();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights lw;
    ASSIGN_OR_RETURN(lw.attn_norm, b.Vector(p + "attn_norm.weight", c.n_embd));
    if (c.fused_qkv) {
      ASSIGN_OR_RETURN(WeightView qkv, b.Matrix(p + "attn_qkv.weight", q + 2 * kv, c.n_embd));
      lw.wq = qkv.Rows(0, q);
      lw.wk = qkv.Rows(q, kv);
      lw.wv = qkv.Rows(q + kv, kv);
    } else {
      ASSIGN_OR_RETURN(lw.wq, b.Matrix(p + "attn_q.weight", q, c.n_embd));
      ASSIGN_OR_RETURN(lw.wk, b.Matrix(p + "attn_k.weight", kv, c.n_embd));
      ASSIGN_OR_RETURN(lw.wv, b.Matrix(p + "attn_v.weight", kv, c.n_embd));
    }
    ASSIGN_OR_RETURN(lw.wo, b.Matrix(p + "attn_output.weight", c.n_embd, q));
    if (c.qkv_bias) {
      ASSIGN_OR_RETURN(lw.bq, b.Vector(p + "attn_q.bias", q));
      ASSIGN_OR_RETURN(lw.bk, b.Vector(p + "attn_k.bias", kv));
      ASSIGN_OR_RETURN(lw.bv, b.Vector(p + "attn_v.bias", kv));
    }
    if (c.qk_norm) {
      ASSIGN_OR_RETURN(lw.q_norm, b.Vector(p + "attn_q_norm.weight", c.head_dim));
      ASSIGN_OR_RETURN(lw.k_norm, b.Vector(p + "attn_k_norm.weight", c.head_dim));
    }
    ASSIGN_OR_RETURN(lw.ffn_norm, b.Vector(p + "ffn_norm.weight", c.n_embd));
    if (c.n_expert > 0) {
      RETURN_IF_ERROR(BindExperts(b, c, p, lw));
      w.layers.push_back(lw);
      continue;
    }
    if (c.post_norms) {
      ASSIGN_OR_RETURN(lw.attn_post_norm, b.Vector(p + "post_attention_norm.weight", c.n_embd));
      ASSIGN_OR_RETURN(lw.ffn_post_norm, b.Vector(p + "post_ffw_norm.weight", c.n_embd));
    }
    if (c.fused_gate_up) {
      ASSIGN_OR_RETURN(WeightView up, b.Matrix(p + "ffn_up.weight", 2 * c.n_ff, c.n_embd));
      lw.w_gate = up.Rows(0, c.n_ff);
      lw.w_up = up.Rows(c.n_ff, c.n_ff);
    } else {
      ASSIGN_OR_RETURN(lw.w_gate, b.Matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd));
      ASSIGN_OR_RETURN(lw.w_up, b.Matrix(p + "ffn_up.weight", c.n_ff, c.n_embd));
    }
    ASSIGN_OR_RETURN(lw.w_down, b.Matrix(p + "ffn_down.weight", c.n_embd, c.n_ff));
    w.layers.push_back(lw);
  }
  return w;
}

std::vector<const WeightView*> LayerMatrices(const LayerWeights& l) {
  std::vector<const WeightView*> v = {&l.wq,         &l.wk,       &l.wv,         &l.wo,
                                      &l.w_gate,     &l.w_up,     &l.w_down,     &l.router,
                                      &l.shexp_gate, &l.shexp_up, &l.shexp_down, &l.shexp_router};
  for (const auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
    for (const WeightView& e : *experts) v.push_back(&e);
  }
  return v;
}

int64_t WeightMatrixBytes(const ModelWeights& w, bool with_token_embd) {
  std::vector<std::pair<const uint8_t*, const uint8_t*>> spans;
  auto add = [&](const WeightView& v) {
    if (v.data != nullptr) spans.emplace_back(v.data, v.data + v.bytes());
  };
  if (with_token_embd) add(w.token_embd);
  add(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* v : LayerMatrices(l)) add(*v);
    for (const WeightView* v : {&l.wqkv, &l.w_gate_up, &l.wqk}) add(*v);
  }
  std::sort(spans.begin(), spans.end());
  int64_t bytes = 0;
  const uint8_t* end = nullptr;
  for (const auto& [b, e] : spans) {
    const uint8_t* from = std::max(b, end);
    if (e > from) bytes += e - from;
    end = std::max(end, e);
  }
  return bytes;
}

namespace {

// Every distinct matrix once (fused views share their tensor's bytes).
std::vector<WeightView> DistinctMatrices(const ModelWeights& w) {
  std::map<const uint8_t*, WeightView> by_start;
  auto add = [&](const WeightView& v) {
    if (v.data != nullptr) by_start.emplace(v.data, v);
  };
  add(w.token_embd);
  add(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* v : LayerMatrices(l)) add(*v);
  }
  std::vector<WeightView> out;
  for (auto& [p, v] : by_start) out.push_back(v);
  return out;
}

Status CheckWeightsFit(const ModelWeights& host, Backend& backend, DType act) {
  int64_t free_bytes = 0, total_bytes = 0;
  backend.MemoryInfo(&free_bytes, &total_bytes);
  if (total_bytes == 0) return Status::Ok();  // host memory: the mapping is used in place
  int64_t need = 0;
  for (const WeightView& v : DistinctMatrices(host)) need += backend.PreparedWeightBytes(v, act);
  if (need > free_bytes) {
    auto gib = [](int64_t b) { return std::to_string(b / (1 << 20)) + " MiB"; };
    return ResourceExhaustedError("out of " + backend.name() + " memory: the weights need " +
                                  gib(need) + " as " + DTypeName(act) + ", " + gib(free_bytes) +
                                  " of " + gib(total_bytes) + " are free");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelWeights> PrepareModelWeights(const ModelWeights& host, Backend& backend, DType act,
                                           const LoadProgress& progress) {
  RETURN_IF_ERROR(CheckWeightsFit(host, backend, act));
  // Tensors are prepared once by their first byte; fused views keep their row offsets.
  std::map<const uint8_t*, std::pair<WeightView, WeightView>> done;  // base -> (host, prepared)
  int64_t total = host.token_embd.bytes() + host.output.bytes(), done_bytes = 0;
  for (const LayerWeights& l : host.layers) {
    for (const WeightView* w : LayerMatrices(l)) total += w->bytes();
  }
  auto weight = [&](const WeightView& w) -> StatusOr<WeightView> {
    if (w.data == nullptr) return w;
    // The tensor holding w, if prepared: the one of the nearest first byte at or before w's.
    if (auto it = done.upper_bound(w.data); it != done.begin()) {
      const auto& [h, prepared] = std::prev(it)->second;
      if (w.data < h.data + h.bytes() && w.type == h.type && w.cols == h.cols) {
        return prepared.Rows((w.data - h.data) / h.row_bytes, w.rows);
      }
    }
    ASSIGN_OR_RETURN(WeightView p, backend.PrepareWeight(w, act));
    done[w.data] = {w, p};
    done_bytes += w.bytes();
    if (progress) progress(std::min(done_bytes, total), total);
    return p;
  };
  auto vec = [&](const VectorView& v) -> StatusOr<VectorView> {
    ASSIGN_OR_RETURN(const float* p, backend.PrepareVector(v.data, v.size));
    return VectorView{p, v.size};
  };
  ModelWeights d;
  // Projections that read the same input run as one matmul where the backend stacks weights
  // (q/k norm needs q and k apart: those models keep separate matmuls for q/k/v).
  const bool stack = backend.StacksWeights();
  auto stacked = [&](const std::vector<WeightView>& parts) -> StatusOr<WeightView> {
    ASSIGN_OR_RETURN(WeightView p, backend.PrepareStacked(parts, act));
    for (const WeightView& w : parts) done_bytes += w.bytes();
    if (progress) progress(std::min(done_bytes, total), total);
    return p;
  };
  // The parts' vectors as one (the stacked matmul's bias), each part a view of it.
  auto stacked_vec =
      [&](std::initializer_list<std::pair<VectorView, VectorView*>> parts) -> StatusOr<VectorView> {
    std::vector<float> b;
    for (const auto& [src, dst] : parts) b.insert(b.end(), src.data, src.data + src.size);
    ASSIGN_OR_RETURN(const float* p, backend.PrepareVector(b.data(), b.size()));
    int64_t at = 0;
    for (const auto& [src, dst] : parts) {
      *dst = {p + at, src.size};
      at += src.size;
    }
    return VectorView{p, static_cast<int64_t>(b.size())};
  };
  // Fused tensors (phi3) are bound as row views of one tensor: prepare the whole tensor first.
  for (const LayerWeights& l : host.layers) {
    if (stack) break;
    if (l.wk.data == l.wq.data + l.wq.bytes()) {
      WeightView whole = l.wq;
      whole.rows = l.wq.rows + l.wk.rows + l.wv.rows;
      RETURN_IF_ERROR(weight(whole).status());
    }
    if (l.w_up.data == l.w_gate.data + l.w_gate.bytes()) {
      WeightView whole = l.w_gate;
      whole.rows = l.w_gate.rows + l.w_up.rows;
      RETURN_IF_ERROR(weight(whole).status());
    }
  }
  ASSIGN_OR_RETURN(d.token_embd, weight(host.token_embd));
  ASSIGN_OR_RETURN(d.output, weight(host.output));
  ASSIGN_OR_RETURN(d.output_norm, vec(host.output_norm));
  ASSIGN_OR_RETURN(d.rope_freqs, vec(host.rope_freqs));
  ASSIGN_OR_RETURN(d.position_embd, weight(host.position_embd));
  ASSIGN_OR_RETURN(d.token_type0, vec(host.token_type0));
  ASSIGN_OR_RETURN(d.embd_norm, vec(host.embd_norm));
  ASSIGN_OR_RETURN(d.embd_norm_b, vec(host.embd_norm_b));
  for (const LayerWeights& l : host.layers) {
    LayerWeights o;
    ASSIGN_OR_RETURN(o.attn_norm, vec(l.attn_norm));
    const bool same_types = l.wq.type == l.wk.type && l.wk.type == l.wv.type;
    const bool all_biases = l.bq.data && l.bk.data && l.bv.data;
    const bool no_biases = !l.bq.data && !l.bk.data && !l.bv.data;
    if (stack && !l.q_norm.data && same_types && (all_biases || no_biases)) {
      ASSIGN_OR_RETURN(o.wqkv, stacked({l.wq, l.wk, l.wv}));
      o.wq = o.wqkv.Rows(0, l.wq.rows);
      o.wk = o.wqkv.Rows(l.wq.rows, l.wk.rows);
      o.wv = o.wqkv.Rows(l.wq.rows + l.wk.rows, l.wv.rows);
      if (all_biases) {
        ASSIGN_OR_RETURN(o.bqkv, stacked_vec({{l.bq, &o.bq}, {l.bk, &o.bk}, {l.bv, &o.bv}}));
      }
    } else if (stack && !l.q_norm.data && l.wq.type == l.wk.type &&
               (l.bq.data != nullptr) == (l.bk.data != nullptr)) {
      // v in another format: q and k still one matmul, v its own.
      ASSIGN_OR_RETURN(o.wqk, stacked({l.wq, l.wk}));
      o.wq = o.wqk.Rows(0, l.wq.rows);
      o.wk = o.wqk.Rows(l.wq.rows, l.wk.rows);
      if (l.bq.data != nullptr) {
        ASSIGN_OR_RETURN(o.bqk, stacked_vec({{l.bq, &o.bq}, {l.bk, &o.bk}}));
      }
      ASSIGN_OR_RETURN(o.wv, weight(l.wv));
      ASSIGN_OR_RETURN(o.bv, vec(l.bv));
    } else {
      ASSIGN_OR_RETURN(o.wq, weight(l.wq));
      ASSIGN_OR_RETURN(o.wk, weight(l.wk));
      ASSIGN_OR_RETURN(o.wv, weight(l.wv));
      ASSIGN_OR_RETURN(o.bq, vec(l.bq));
      ASSIGN_OR_RETURN(o.bk, vec(l.bk));
      ASSIGN_OR_RETURN(o.bv, vec(l.bv));
    }
    ASSIGN_OR_RETURN(o.wo, weight(l.wo));
    ASSIGN_OR_RETURN(o.q_norm, vec(l.q_norm));
    ASSIGN_OR_RETURN(o.k_norm, vec(l.k_norm));
    ASSIGN_OR_RETURN(o.ffn_norm, vec(l.ffn_norm));
    ASSIGN_OR_RETURN(o.attn_post_norm, vec(l.attn_post_norm));
    ASSIGN_OR_RETURN(o.ffn_post_norm, vec(l.ffn_post_norm));
    if (stack && l.w_gate.data != nullptr && l.w_gate.type == l.w_up.type) {
      ASSIGN_OR_RETURN(o.w_gate_up, stacked({l.w_gate, l.w_up}));
      o.w_gate = o.w_gate_up.Rows(0, l.w_gate.rows);
      o.w_up = o.w_gate_up.Rows(l.w_gate.rows, l.w_up.rows);
    } else {
      ASSIGN_OR_RETURN(o.w_gate, weight(l.w_gate));
      ASSIGN_OR_RETURN(o.w_up, weight(l.w_up));
    }
    ASSIGN_OR_RETURN(o.w_down, weight(l.w_down));
    for (auto [src, dst] : {std::pair{&l.bo, &o.bo},
                            {&l.b_up, &o.b_up},
                            {&l.b_down, &o.b_down},
                            {&l.attn_out_norm, &o.attn_out_norm},
                            {&l.attn_out_norm_b, &o.attn_out_norm_b},
                            {&l.out_norm, &o.out_norm},
                            {&l.out_norm_b, &o.out_norm_b}}) {
      ASSIGN_OR_RETURN(*dst, vec(*src));
    }
    // Experts: the stacked tensors whole (one allocation each), then each expert's view in them.
    ASSIGN_OR_RETURN(o.router, weight(l.router));
    for (auto [all, views, out] : {std::tuple{&l.gate_exps_all, &l.gate_exps, &o.gate_exps},
                                   std::tuple{&l.up_exps_all, &l.up_exps, &o.up_exps},
                                   std::tuple{&l.down_exps_all, &l.down_exps, &o.down_exps}}) {
      RETURN_IF_ERROR(weight(*all).status());
      for (const WeightView& e : *views) {
        ASSIGN_OR_RETURN(WeightView p, weight(e));
        out->push_back(p);
      }
    }
    ASSIGN_OR_RETURN(o.shexp_gate, weight(l.shexp_gate));
    ASSIGN_OR_RETURN(o.shexp_up, weight(l.shexp_up));
    ASSIGN_OR_RETURN(o.shexp_down, weight(l.shexp_down));
    ASSIGN_OR_RETURN(o.shexp_router, weight(l.shexp_router));
    d.layers.push_back(o);
  }
  return d;
}

}  // namespace forge
