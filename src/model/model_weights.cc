// BindModelWeights.
#include "model/model_weights.h"

#include <algorithm>
#include <initializer_list>
#include <map>
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

}  // namespace

StatusOr<ModelWeights> BindModelWeights(const GgufFile& f, const ModelConfig& c) {
  Binder b(f);
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

int64_t WeightMatrixBytes(const ModelWeights& w, bool with_token_embd) {
  std::vector<std::pair<const uint8_t*, const uint8_t*>> spans;
  auto add = [&](const WeightView& v) {
    if (v.data != nullptr) spans.emplace_back(v.data, v.data + v.bytes());
  };
  if (with_token_embd) add(w.token_embd);
  add(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.wqkv,
                                &l.w_gate_up, &l.wqk}) {
      add(*v);
    }
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
  auto add = [&](const WeightView& v) { by_start.emplace(v.data, v); };
  add(w.token_embd);
  add(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*v);
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
    for (const WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      total += w->bytes();
    }
  }
  auto weight = [&](const WeightView& w) -> StatusOr<WeightView> {
    for (auto& [base, pair] : done) {
      const WeightView& h = pair.first;
      if (w.data >= h.data && w.data < h.data + h.bytes() && w.type == h.type && w.cols == h.cols) {
        return pair.second.Rows((w.data - h.data) / h.row_bytes, w.rows);
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
    if (stack && l.w_gate.type == l.w_up.type) {
      ASSIGN_OR_RETURN(o.w_gate_up, stacked({l.w_gate, l.w_up}));
      o.w_gate = o.w_gate_up.Rows(0, l.w_gate.rows);
      o.w_up = o.w_gate_up.Rows(l.w_gate.rows, l.w_up.rows);
    } else {
      ASSIGN_OR_RETURN(o.w_gate, weight(l.w_gate));
      ASSIGN_OR_RETURN(o.w_up, weight(l.w_up));
    }
    ASSIGN_OR_RETURN(o.w_down, weight(l.w_down));
    d.layers.push_back(o);
  }
  return d;
}

}  // namespace forge
