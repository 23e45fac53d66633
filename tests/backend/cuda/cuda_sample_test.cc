// The Sample kernel against the CPU Sampler, token for token: vocabularies from 1 to 151936,
// batches of 1 to 128 rows, logits with heavy ties, near-ties a few ulp apart, -inf entries, NaN
// and +inf, every truncation (top_k, top_p, min_p and their combinations) at several
// temperatures, logit_bias, penalties and masks as LogitEdits, grammars' allowed sets (bitmask
// rows, dense to a single token), logprobs with top alternatives, and rows with a stride wider
// than the vocabulary. The rows and edits come from each request's
// SamplingParams through the engine's builder (engine/sample_rows.h).
#include "backend/cuda/sample/sample_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "engine/sample_rows.h"
#include "sampling/sampler.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// How a row's logits are drawn.
enum class Kind {
  kNormal,     // N(0, 2): distinct values
  kQuantized,  // six levels: ties everywhere, the max shared by a sixth of the vocabulary
  kPeaked,     // N(0, 1) and a few tokens far above
  kMasked,     // N(0, 2) with 30% -inf
  kWide,       // N(0, 12): more than the kernel's 32 units of count buckets
  kFlat,       // every logit equal
  kNearTies,   // 5.0 and the 63 floats above it: ties and neighbors a few ulp apart
  kTwoMax,     // N(0, 1) and the max at exactly two random ids
  kNegative,   // N(-60, 3): every logit far below zero
  kExtreme,    // +-0, denormals, +-1e38, FLT_MIN, 3: signed zeros, overflowing differences
  kCount,
};

const char* KindName(Kind k) {
  static const char* names[] = {"normal", "quantized", "peaked",  "masked",   "wide",
                                "flat",   "near-ties", "two-max", "negative", "extreme"};
  return names[static_cast<int>(k)];
}

void FillLogits(Kind kind, std::mt19937& rng, float* x, int n) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform;
  switch (kind) {
    case Kind::kNormal:
      for (int i = 0; i < n; ++i) x[i] = 2.0f * normal(rng);
      break;
    case Kind::kQuantized: {
      const float levels[] = {-3.0f, -1.5f, 0.0f, 0.5f, 1.0f, 2.0f};
      for (int i = 0; i < n; ++i) x[i] = levels[rng() % 6];
      break;
    }
    case Kind::kPeaked:
      for (int i = 0; i < n; ++i) x[i] = normal(rng);
      for (int j = 0; j < 3; ++j) x[rng() % n] = 8.0f + 4.0f * uniform(rng);
      break;
    case Kind::kMasked:
      for (int i = 0; i < n; ++i) x[i] = uniform(rng) < 0.3f ? -kInf : 2.0f * normal(rng);
      break;
    case Kind::kWide:
      for (int i = 0; i < n; ++i) x[i] = 12.0f * normal(rng);
      break;
    case Kind::kFlat:
      for (int i = 0; i < n; ++i) x[i] = 0.25f;
      break;
    case Kind::kNearTies:
      for (int i = 0; i < n; ++i) {
        float v = 5.0f;
        for (int k = static_cast<int>(rng() % 64); k > 0; --k) v = std::nextafter(v, kInf);
        x[i] = v;
      }
      break;
    case Kind::kTwoMax: {
      for (int i = 0; i < n; ++i) x[i] = normal(rng);
      x[rng() % n] = 9.0f;
      x[rng() % n] = 9.0f;
      break;
    }
    case Kind::kNegative:
      for (int i = 0; i < n; ++i) x[i] = -60.0f + 3.0f * normal(rng);
      break;
    case Kind::kExtreme: {
      const float values[] = {-0.0f, 0.0f, 1e-40f, -1e-40f, 1e38f, -1e38f, FLT_MIN, 3.0f};
      for (int i = 0; i < n; ++i) x[i] = values[rng() % 8];
      if (rng() % 2 == 0) {  // no 1e38: the max is 3 or lower
        for (int i = 0; i < n; ++i) x[i] = x[i] == 1e38f ? -0.0f : x[i];
      }
      break;
    }
    case Kind::kCount:
      break;
  }
}

// One row's request: its params and context.
struct Request {
  SamplingParams params;
  uint64_t request_id = 0;
  std::vector<int32_t> prompt, generated, eos;
  std::vector<uint32_t> allowed;  // a grammar's allowed set (empty: none)
  bool only_end = false;
  Kind kind = Kind::kNormal;

  SampleContext Context() const {
    return {.request_id = request_id,
            .prompt = prompt,
            .generated = generated,
            .eos_ids = eos,
            .allowed = allowed,
            .only_end_allowed = only_end};
  }
};

std::string Describe(const Request& q) {
  const SamplingParams& p = q.params;
  std::ostringstream s;
  s << "kind=" << KindName(q.kind) << " T=" << p.temperature << " top_k=" << p.top_k
    << " top_p=" << p.top_p << " min_p=" << p.min_p << " bias=" << p.logit_bias.size()
    << " rep=" << p.repetition_penalty << " pres=" << p.presence_penalty
    << " freq=" << p.frequency_penalty << " last_n=" << p.penalty_last_n
    << " min_tokens=" << p.min_tokens << " ignore_eos=" << p.ignore_eos
    << " allowed=" << (q.allowed.empty() ? -1 : static_cast<int>(std::accumulate(
                                                    q.allowed.begin(), q.allowed.end(), 0,
                                                    [](int a, uint32_t w) {
                                                      return a + __builtin_popcount(w);
                                                    })))
    << " logprobs=" << p.logprobs << " top_logprobs=" << p.top_logprobs
    << " seed=" << p.seed.value_or(0) << " request=" << q.request_id
    << " position=" << q.Context().position();
  return s.str();
}

// A request for row r: truncation settings cycle with r so a batch of 128 covers every
// combination of top_k x top_p x min_p; the rest is random.
Request MakeRequest(int r, int n, std::mt19937& rng, Kind kind) {
  Request q;
  q.kind = kind;
  SamplingParams& p = q.params;
  const int32_t top_ks[] = {0, 1, 2, 40, 1000, n - 1};
  const double top_ps[] = {1.0, 0.95, 0.5, 1e-4};
  const double min_ps[] = {0.0, 0.05, 1.0};
  const double temperatures[] = {0.3, 1.0, 2.0};
  p.top_k = top_ks[r % 6];
  p.top_p = top_ps[(r / 6) % 4];
  p.min_p = min_ps[(r / 24) % 3];
  p.temperature = rng() % 5 == 0 ? 0.0 : temperatures[rng() % 3];
  if (rng() % 8 == 0) p.top_k = -1;
  auto token = [&] { return static_cast<int32_t>(rng() % n); };
  if (rng() % 3 == 0) {
    const float biases[] = {-kInf, -5.0f, 2.5f, 10.0f, 0.0f};
    for (int j = static_cast<int>(rng() % 4); j >= 0; --j)
      p.logit_bias[token()] = biases[rng() % 5];
  }
  for (int j = static_cast<int>(rng() % 12); j > 0; --j) q.prompt.push_back(token());
  for (int j = static_cast<int>(rng() % 12); j > 0; --j) q.generated.push_back(token());
  if (rng() % 3 == 0) {
    const double reps[] = {1.0, 1.3, 0.8};
    const double pres[] = {0.0, 0.5, -1.0};
    const double freqs[] = {0.0, 0.25, 1.0};
    const int32_t last_ns[] = {-1, 0, 8};
    p.repetition_penalty = reps[rng() % 3];
    p.presence_penalty = pres[rng() % 3];
    p.frequency_penalty = freqs[rng() % 3];
    p.penalty_last_n = last_ns[rng() % 3];
    if (n > 1 && rng() % 2 == 0 && !q.generated.empty()) {  // repeats to count
      q.generated.push_back(q.generated[0]);
      q.generated.push_back(q.generated[0]);
    }
  }
  if (rng() % 4 == 0) {
    q.eos.push_back(token());
    p.stop_token_ids.push_back(token());
    if (rng() % 2 == 0) p.min_tokens = static_cast<int32_t>(q.generated.size()) + 1;
    if (rng() % 3 == 0) p.ignore_eos = true;
  }
  if (rng() % 5 < 2) {
    p.logprobs = true;
    const int32_t tops[] = {0, 1, 5, 20};
    p.top_logprobs = tops[rng() % 4];
  }
  p.seed = (static_cast<uint64_t>(rng()) << 32) | rng();
  q.request_id = rng();
  if (rng() % 3 == 0) {  // a grammar's allowed set: half, a few, or one token (maybe an end)
    q.allowed.assign((n + 31) / 32, 0u);
    const uint32_t densities[] = {2, 50, 0};
    const uint32_t d = densities[rng() % 3];
    for (int32_t t = 0; t < n && d != 0; ++t) {
      if (rng() % d == 0) q.allowed[t >> 5] |= 1u << (t & 31);
    }
    const int32_t one = token();
    q.allowed[one >> 5] |= 1u << (one & 31);
    q.only_end = d == 0 && rng() % 2 == 0;
    if (q.only_end) q.eos.push_back(one);
  }
  return q;
}

bool SameFloat(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

struct Batch {
  int32_t n_vocab = 0;
  int64_t stride = 0;         // 0: n_vocab
  std::vector<float> logits;  // [rows, stride or n_vocab]
  std::vector<Request> requests;

  int64_t RowStride() const { return stride == 0 ? n_vocab : stride; }
};

struct Counts {
  int sampled = 0, greedy = 0, errors = 0, top_lists = 0;
};

// Runs the batch through sample_cuda and compares every row with the CPU Sampler: the processed
// logits left in place, the error or the token, the logprob and the top alternatives.
void RunAndCompare(const Batch& b, Counts* counts = nullptr) {
  const int32_t n = b.n_vocab;
  const int64_t rows = static_cast<int64_t>(b.requests.size());
  const int64_t stride = b.RowStride();
  ASSERT_EQ(b.logits.size(), static_cast<size_t>(rows * stride));
  // The rows and edits as the engine builds them (engine/sample_rows.h; EngineSamplingTest checks
  // that builder against the Sampler's own processing).
  SampleRows built;
  for (const Request& q : b.requests) {
    const Status st = built.Append(q.params, q.Context(), n);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  const std::vector<LogitEdit>& edits = built.edits;
  const std::vector<SampleRow>& sample_rows = built.rows;

  const size_t logit_bytes = b.logits.size() * sizeof(float);
  const size_t row_bytes = sample_rows.size() * sizeof(SampleRow);
  const size_t edit_bytes = std::max<size_t>(1, edits.size()) * sizeof(LogitEdit);
  const size_t out_bytes = static_cast<size_t>(rows) * sizeof(SampleOut);
  const size_t allowed_bytes = std::max<size_t>(1, built.allowed.size()) * sizeof(uint32_t);
  auto d_allowed = cuda::DeviceAlloc(allowed_bytes);
  ASSERT_TRUE(d_allowed.ok());
  if (!built.allowed.empty()) {
    ASSERT_TRUE(cuda::CopyToDevice(*d_allowed, built.allowed.data(),
                                   built.allowed.size() * sizeof(uint32_t))
                    .ok());
  }
  auto d_logits = cuda::DeviceAlloc(logit_bytes);
  auto d_rows = cuda::DeviceAlloc(row_bytes);
  auto d_edits = cuda::DeviceAlloc(edit_bytes);
  auto d_out = cuda::DeviceAlloc(out_bytes);
  ASSERT_TRUE(d_logits.ok() && d_rows.ok() && d_edits.ok() && d_out.ok());
  ASSERT_TRUE(cuda::CopyToDevice(*d_logits, b.logits.data(), logit_bytes).ok());
  ASSERT_TRUE(cuda::CopyToDevice(*d_rows, sample_rows.data(), row_bytes).ok());
  if (!edits.empty()) {
    ASSERT_TRUE(cuda::CopyToDevice(*d_edits, edits.data(), edits.size() * sizeof(LogitEdit)).ok());
  }
  ASSERT_TRUE(cuda::DeviceMemset(*d_out, 0xA5, out_bytes).ok());  // poison
  SampleParams p;
  p.logits = static_cast<float*>(*d_logits);
  p.n_rows = rows;
  p.n_vocab = n;
  p.row_stride = b.stride;
  p.rows = static_cast<const SampleRow*>(*d_rows);
  p.edits = static_cast<const LogitEdit*>(*d_edits);
  p.out = static_cast<SampleOut*>(*d_out);
  p.allowed = static_cast<const uint32_t*>(*d_allowed);
  p.allowed_words = built.allowed_words;
  p.allowed_rows = built.allowed_rows();
  const Status st = cuda::sample_cuda(p);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(cuda::DeviceSynchronize().ok());
  std::vector<SampleOut> out(rows);
  std::vector<float> edited(b.logits.size());
  ASSERT_TRUE(cuda::CopyToHost(out.data(), *d_out, out_bytes).ok());
  ASSERT_TRUE(cuda::CopyToHost(edited.data(), *d_logits, logit_bytes).ok());
  cuda::DeviceFree(*d_logits);
  cuda::DeviceFree(*d_rows);
  cuda::DeviceFree(*d_edits);
  cuda::DeviceFree(*d_out);
  cuda::DeviceFree(*d_allowed);

  Sampler sampler(n);
  int failures = 0;
  for (int64_t r = 0; r < rows && failures < 10; ++r) {
    const Request& q = b.requests[r];
    const SampleContext context = q.Context();
    const float* original = b.logits.data() + r * stride;
    const std::span<const float> logits(original, static_cast<size_t>(n));
    const std::string where = "n_vocab=" + std::to_string(n) + " stride=" + std::to_string(stride) +
                              " row " + std::to_string(r) + " of " + std::to_string(rows) + ": " +
                              Describe(q);
    ++failures;  // until the row passes

    // The logits left in place are the processed logits; the stride's padding is untouched.
    std::vector<float> processed(logits.begin(), logits.end());
    ASSERT_TRUE(sampler.ProcessLogits(q.params, context, processed).ok()) << where;
    const float* got_row = edited.data() + r * stride;
    bool same = true;
    for (int32_t i = 0; i < n && same; ++i) {
      EXPECT_TRUE(SameFloat(got_row[i], processed[i]))
          << where << ": processed logit " << i << " is " << got_row[i] << ", want "
          << processed[i];
      same = SameFloat(got_row[i], processed[i]);
    }
    for (int64_t i = n; i < stride; ++i) {
      ASSERT_EQ(std::memcmp(&got_row[i], &original[i], sizeof(float)), 0)
          << where << ": padding at " << i << " overwritten";
    }
    if (!same) continue;

    const SampleOut& got = out[r];
    StatusOr<SampleResult> want = sampler.Sample(q.params, context, logits);
    if (!want.ok()) {
      if (counts != nullptr) ++counts->errors;
      if (want.status().code() == StatusCode::kInvalidArgument) {
        int32_t index = 0;
        while (index < n && processed[index] < kInf) ++index;  // the first NaN or +inf
        ASSERT_LT(index, n) << where << ": " << want.status().ToString();
        EXPECT_EQ(got.error, 1) << where << ": " << want.status().ToString();
        EXPECT_EQ(got.error_index, index) << where;
        if (got.error != 1 || got.error_index != index) continue;
      } else {
        ASSERT_EQ(want.status().code(), StatusCode::kFailedPrecondition)
            << where << ": " << want.status().ToString();
        EXPECT_EQ(got.error, 2) << where;
        if (got.error != 2) continue;
      }
      --failures;
      continue;
    }
    if (counts != nullptr) ++(q.params.greedy() ? counts->greedy : counts->sampled);
    EXPECT_EQ(got.error, 0) << where << ": error_index=" << got.error_index;
    EXPECT_EQ(got.token, want->token) << where;
    if (got.error != 0 || got.token != want->token) continue;
    if (q.params.logprobs) {
      EXPECT_NEAR(got.logprob, want->logprob, 1e-9) << where;
      const int32_t n_top = static_cast<int32_t>(want->top_logprobs.size());
      EXPECT_EQ(got.n_top, n_top) << where;
      if (std::abs(got.logprob - want->logprob) > 1e-9 || got.n_top != n_top) continue;
      bool top_ok = true;
      for (int32_t k = 0; k < n_top; ++k) {
        const TokenLogprob& e = want->top_logprobs[k];
        EXPECT_EQ(got.top_tokens[k], e.token) << where << ": top " << k;
        EXPECT_NEAR(got.top_logprobs[k], e.logprob, 1e-9) << where << ": top " << k;
        top_ok = top_ok && got.top_tokens[k] == e.token &&
                 std::abs(got.top_logprobs[k] - e.logprob) <= 1e-9;
      }
      if (!top_ok) continue;
      if (counts != nullptr && n_top > 0) ++counts->top_lists;
    } else {
      EXPECT_EQ(got.n_top, 0) << where;
      if (got.n_top != 0) continue;
    }
    --failures;
  }
  EXPECT_EQ(failures, 0) << "rows that differ from the CPU Sampler (at most 10 reported)";
}

// A batch of `rows` requests over n_vocab with logits of the given kinds (cycling by row) and a
// few rows that must fail: NaN, +inf, every logit -inf, and +inf made by a bias.
Batch RandomBatch(int32_t n, int rows, uint32_t seed, std::vector<Kind> kinds, int64_t stride = 0,
                  bool with_errors = true) {
  std::mt19937 rng(seed);
  Batch b;
  b.n_vocab = n;
  b.stride = stride;
  const int64_t s = b.RowStride();
  b.logits.assign(static_cast<size_t>(rows * s), std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < rows; ++r) {
    const Kind kind = kinds[r % kinds.size()];
    float* x = b.logits.data() + r * s;
    FillLogits(kind, rng, x, n);
    b.requests.push_back(MakeRequest(r, n, rng, kind));
    if (!with_errors || rows < 7) continue;
    Request& q = b.requests.back();
    switch (r % 37) {
      case 5:  // NaN (and a later +inf): error 1 at the NaN
        x[rng() % n] = std::numeric_limits<float>::quiet_NaN();
        x[n - 1] = kInf;
        break;
      case 11:
        x[rng() % n] = kInf;
        break;
      case 17:
        for (int32_t i = 0; i < n; ++i) x[i] = -kInf;
        break;
      case 23: {  // finite logits that a bias overflows to +inf
        const int32_t t = static_cast<int32_t>(rng() % n);
        x[t] = 3e38f;
        q.params.logit_bias[t] = 1e38f;
        break;
      }
      case 29:  // every token banned by the bias
        if (n <= 2) {
          for (int32_t i = 0; i < n; ++i) q.params.logit_bias[i] = -kInf;
        }
        break;
      default:
        break;
    }
  }
  return b;
}

const std::vector<Kind> kAllKinds = {
    Kind::kNormal, Kind::kQuantized, Kind::kPeaked, Kind::kMasked,   Kind::kWide,
    Kind::kFlat,   Kind::kNearTies,  Kind::kTwoMax, Kind::kNegative, Kind::kExtreme};

TEST(CudaSampleTest, TinyVocabularies) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  for (int32_t n : {1, 2}) {
    for (int rows : {1, 7, 128}) {
      RunAndCompare(RandomBatch(n, rows, 100 + n * 10 + rows, kAllKinds), &c);
    }
  }
  EXPECT_GT(c.sampled, 50);
  EXPECT_GT(c.errors, 0);
}

TEST(CudaSampleTest, SmallVocabularyManyDraws) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  for (uint32_t seed = 0; seed < 8; ++seed) {
    RunAndCompare(RandomBatch(517, 128, 200 + seed, kAllKinds), &c);
  }
  RunAndCompare(RandomBatch(517, 7, 300, kAllKinds), &c);
  RunAndCompare(RandomBatch(517, 1, 301, {Kind::kQuantized}), &c);
  EXPECT_GT(c.sampled, 600);
  EXPECT_GT(c.top_lists, 50);
  EXPECT_GT(c.errors, 0);
}

TEST(CudaSampleTest, Vocab32000) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    RunAndCompare(RandomBatch(32000, 128, 400 + seed, kAllKinds), &c);
  }
  RunAndCompare(RandomBatch(32000, 7, 410, kAllKinds), &c);
  EXPECT_GT(c.sampled, 300);
  EXPECT_GT(c.top_lists, 20);
}

TEST(CudaSampleTest, LargeVocabularies) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  for (int32_t n : {128256, 151936}) {
    RunAndCompare(RandomBatch(n, 128, 500 + n % 97, kAllKinds), &c);
    RunAndCompare(RandomBatch(n, 7, 600 + n % 97, kAllKinds), &c);
    RunAndCompare(RandomBatch(n, 1, 700 + n % 97, {Kind::kNormal}), &c);
  }
  EXPECT_GT(c.sampled, 100);
}

// Many draws from a few fixed distributions: the same logits in every row, requests at different
// seeds and positions.
TEST(CudaSampleTest, RepeatedDrawsFromOneDistribution) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  for (Kind kind : {Kind::kNormal, Kind::kQuantized, Kind::kPeaked, Kind::kNearTies}) {
    const int32_t n = 32000;
    std::mt19937 rng(800 + static_cast<int>(kind));
    std::vector<float> row(n);
    FillLogits(kind, rng, row.data(), n);
    Batch b;
    b.n_vocab = n;
    for (int r = 0; r < 256; ++r) {
      b.logits.insert(b.logits.end(), row.begin(), row.end());
      Request q = MakeRequest(r, n, rng, kind);
      q.params.temperature = r % 2 == 0 ? 1.0 : 0.7;
      q.params.logit_bias.clear();
      q.params.repetition_penalty = 1.0;
      q.params.presence_penalty = q.params.frequency_penalty = 0.0;
      q.params.min_tokens = 0;
      q.params.ignore_eos = false;
      q.generated.resize(rng() % 50, 7);  // positions vary
      b.requests.push_back(q);
    }
    RunAndCompare(b, &c);
  }
  EXPECT_GT(c.sampled, 900);
}

// Rows wider than the vocabulary (NaN padding the kernel must neither read nor write), at
// unaligned strides.
TEST(CudaSampleTest, RowStrideWiderThanVocab) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Counts c;
  RunAndCompare(RandomBatch(517, 7, 900, kAllKinds, 517 + 13), &c);
  RunAndCompare(RandomBatch(32000, 7, 901, kAllKinds, 32003), &c);
  RunAndCompare(RandomBatch(2, 128, 902, kAllKinds, 5), &c);
  RunAndCompare(RandomBatch(151936, 7, 903, kAllKinds, 151936 + 64), &c);
  EXPECT_GT(c.sampled, 10);
}

// Greedy ties and top alternatives on hand-made rows: the lowest id wins, -inf is never listed.
TEST(CudaSampleTest, TiesGoToTheLowestId) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  Batch b;
  b.n_vocab = 6;
  const std::vector<std::vector<float>> rows = {{1, 3, 3, 2, 3, 0},
                                                {-kInf, -kInf, 5, -kInf, 5, -kInf},
                                                {0, 0, 0, 0, 0, 0},
                                                {-1, -kInf, -1, -kInf, -kInf, -kInf}};
  for (const auto& row : rows) {
    b.logits.insert(b.logits.end(), row.begin(), row.end());
    Request q;
    q.params.temperature = 0.0;
    q.params.logprobs = true;
    q.params.top_logprobs = 5;
    b.requests.push_back(q);
  }
  RunAndCompare(b);
}

TEST(CudaSampleTest, RejectsBadShapes) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  SampleParams p;
  EXPECT_TRUE(cuda::sample_cuda(p).ok());  // no rows: nothing to do
  p.n_rows = 1;
  p.n_vocab = 10;
  p.row_stride = 5;
  EXPECT_FALSE(cuda::sample_cuda(p).ok());
  p.row_stride = 0;
  p.n_vocab = 0;
  EXPECT_FALSE(cuda::sample_cuda(p).ok());
}

}  // namespace
}  // namespace forge
