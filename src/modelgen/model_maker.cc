// MakeModel: metadata, then per tensor a parallel generate+quantize over chunks of rows, with the
// previous tensor's write to disk overlapping the next tensor's generation.
#include "modelgen/model_maker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "gguf/gguf_writer.h"
#include "modelgen/synthetic_vocab.h"
#include "modelgen/weight_init.h"
#include "modelgen/word_vocab.h"
#include "quant/quantize.h"

namespace forge {
namespace {

void SetMetadata(const ModelSpec& s, const MetadataList& vocab, const WeightInit& init,
                 GgufWriter& w) {
  const std::string a = s.arch + ".";
  auto u32 = [](int64_t v) { return GgufValue::U32(static_cast<uint32_t>(v)); };
  w.Set("general.architecture", GgufValue::String(s.arch));
  w.Set("general.name", GgufValue::String(s.name));
  const int file_type = FileTypeOf(s);
  if (file_type >= 0) w.Set("general.file_type", u32(file_type));
  if (s.weight_type != GgmlType::kF32) w.Set("general.quantization_version", u32(2));
  w.Set(a + "context_length", u32(s.n_ctx));
  w.Set(a + "embedding_length", u32(s.n_embd));
  w.Set(a + "block_count", u32(s.n_layer));
  w.Set(a + "feed_forward_length", u32(s.n_ff));
  w.Set(a + "attention.head_count", u32(s.n_head));
  w.Set(a + "attention.head_count_kv", u32(s.n_head_kv));
  w.Set(a + "rope.dimension_count", u32(HeadDim(s)));
  if (s.head_dim > 0) {
    w.Set(a + "attention.key_length", u32(s.head_dim));
    w.Set(a + "attention.value_length", u32(s.head_dim));
  }
  w.Set(a + "rope.freq_base", GgufValue::F32(s.rope_theta));
  w.Set(a + "attention.layer_norm_rms_epsilon", GgufValue::F32(s.rms_eps));
  w.Set(a + "vocab_size", u32(s.n_vocab));
  if (s.sliding_window > 0) w.Set(a + "attention.sliding_window", u32(s.sliding_window));
  if (s.n_expert > 0) {
    w.Set(a + "expert_count", u32(s.n_expert));
    w.Set(a + "expert_used_count", u32(s.n_expert_used));
    w.Set(a + "expert_feed_forward_length", u32(s.n_ff_exp));
    if (s.n_ff_shexp > 0) w.Set(a + "expert_shared_feed_forward_length", u32(s.n_ff_shexp));
  }
  if (s.pooling != 0) w.Set(a + "pooling_type", u32(s.pooling));
  if (s.arch == "bert" || s.arch == "nomic-bert") {
    w.Set(a + "attention.causal", GgufValue::Bool(false));
    w.Set(a + "attention.layer_norm_epsilon", GgufValue::F32(s.rms_eps));
    w.Set("tokenizer.ggml.token_type_count", u32(2));
  }
  if (s.attn_softcap > 0) w.Set(a + "attn_logit_softcapping", GgufValue::F32(s.attn_softcap));
  if (s.final_softcap > 0) w.Set(a + "final_logit_softcapping", GgufValue::F32(s.final_softcap));
  w.Set("forge.synthetic.seed", GgufValue::U64(s.seed));
  w.Set("forge.synthetic.format", GgufValue::String(WeightFormatName(s)));
  if (s.peak > 0) {
    w.Set("forge.peaked.peak", GgufValue::F32(s.peak));
    w.Set("forge.peaked.successor_mul",
          GgufValue::U64(s.tied_embeddings ? 1 : init.successor_mul()));
    w.Set("forge.peaked.successor_add",
          GgufValue::U64(s.tied_embeddings ? 0 : init.successor_add()));
    if (s.successor_first > 0) {
      w.Set("forge.peaked.successor_first", GgufValue::U64(s.successor_first));
    }
  }
  for (const auto& [key, value] : vocab) w.Set(key, value);
}

// Generates and quantizes every row of t into out (t.n_bytes), on `threads` threads pulling
// fixed chunks of rows.
void FillTensor(const TensorPlan& t, const WeightInit& init, int threads, uint8_t* out) {
  const int64_t n = t.dims[0];
  const int64_t rows = t.rows();
  const int64_t row_bytes = t.n_bytes / rows;
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 18) / n);
  const int64_t n_chunks = (rows + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  auto work = [&] {
    std::vector<float> row(n);
    for (int64_t c; (c = next.fetch_add(1)) < n_chunks;) {
      for (int64_t r = c * chunk; r < std::min(rows, (c + 1) * chunk); ++r) {
        init.FillRow(t, r, row.data());
        Status st = QuantizeRow(t.type, row.data(), out + r * row_bytes, n);
        CHECK(st.ok()) << t.name << ": " << st.ToString();
      }
    }
  };
  const int64_t n_threads = std::min<int64_t>(threads, n_chunks);
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < n_threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
}

}  // namespace

Status ResolveVocab(ModelSpec* spec) {
  if (spec->vocab_from.empty() && spec->vocab == VocabKind::kWords) {
    const WordVocabInfo words = WordVocabShape();
    spec->n_vocab = words.n_vocab;
    spec->successor_first = words.first_word;
  }
  if (spec->vocab_from.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(CopiedVocab v, ReadVocabFrom(spec->vocab_from));
  spec->n_vocab = v.n_vocab;
  return Status::Ok();
}

StatusOr<MakeModelStats> MakeModel(const ModelSpec& spec_in, const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  ModelSpec s = spec_in;
  RETURN_IF_ERROR(ResolveVocab(&s));
  MetadataList vocab;
  if (!s.vocab_from.empty()) {
    ASSIGN_OR_RETURN(CopiedVocab v, ReadVocabFrom(s.vocab_from));
    s.n_vocab = v.n_vocab;
    vocab = std::move(v.keys);
  }
  ASSIGN_OR_RETURN(ModelPlan plan, PlanModel(s));
  if (s.vocab_from.empty()) vocab = SyntheticVocab(s.vocab, s.n_vocab);
  const WeightInit init(s);
  const int threads = s.threads > 0
                          ? s.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  GgufWriter w;
  SetMetadata(s, vocab, init, w);
  vocab.clear();
  for (const TensorPlan& t : plan.tensors) RETURN_IF_ERROR(w.AddTensor(t.name, t.type, t.dims));
  RETURN_IF_ERROR(w.Begin(path));
  auto fail = [&](const Status& st) {
    (void)w.Finish();
    std::remove(path.c_str());
    return st;
  };
  // Double buffering: tensor i is generated into bufs[i % 2] while tensor i - 1 is written.
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;  // uninitialized; every byte is generated before use
    size_t capacity = 0;
  } bufs[2];
  std::future<Status> writing;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& t = plan.tensors[i];
    Buffer& buf = bufs[i % 2];
    const size_t size = static_cast<size_t>(t.n_bytes);
    if (buf.capacity < size) {
      buf.data.reset();
      buf.data.reset(new uint8_t[size]);
      buf.capacity = size;
    }
    FillTensor(t, init, threads, buf.data.get());
    if (writing.valid()) {
      Status st = writing.get();
      if (!st.ok()) return fail(st);
    }
    const std::span<const uint8_t> bytes(buf.data.get(), size);
    writing =
        std::async(std::launch::async, [&w, bytes, i] { return w.WriteTensorData(i, bytes); });
  }
  if (writing.valid()) {
    Status st = writing.get();
    if (!st.ok()) return fail(st);
  }
  Status st = w.Finish();
  if (!st.ok()) {
    std::remove(path.c_str());
    return st;
  }
  MakeModelStats stats;
  stats.n_params = plan.n_params;
  stats.n_bytes = plan.n_bytes;
  stats.n_tensors = static_cast<int>(plan.tensors.size());
  stats.n_fallback = plan.n_fallback;
  stats.threads = threads;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace forge
