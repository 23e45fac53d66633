// Embedding lookups from tables that hold a slice of the vocabulary (a tensor-parallel shard) on
// the CUDA backend: each slice matches embedding_ref with the same row_offset / n_vocab, ids
// outside the slice give zeros, the slices' outputs sum to the whole table's lookup, and the
// whole table (no slice) still matches the reference. F16 and F32 tables go through the gather
// kernel, Q8_0 / Q4_K tables through the dequantizing gather.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/embedding/embedding.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/test_env.h"

namespace forge {
namespace {

// A host table: its bytes and a view of them.
struct HostTable {
  std::vector<uint8_t> bytes;
  WeightView view;
  // Rows [begin, end) as a table of their own.
  WeightView Rows(int64_t begin, int64_t end) const {
    WeightView v = view;
    v.rows = end - begin;
    v.data = view.data + begin * view.row_bytes;
    return v;
  }
};

HostTable MakeTable(GgmlType type, int64_t vocab, int64_t dim, uint64_t seed) {
  HostTable t;
  if (type == GgmlType::kF16 || type == GgmlType::kF32) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    const int64_t es = type == GgmlType::kF16 ? 2 : 4;
    t.bytes.resize(vocab * dim * es);
    for (int64_t i = 0; i < vocab * dim; ++i) {
      const float v = u(rng);
      if (type == GgmlType::kF16) {
        const uint16_t h = F32ToF16(v);
        std::memcpy(t.bytes.data() + i * 2, &h, 2);
      } else {
        std::memcpy(t.bytes.data() + i * 4, &v, 4);
      }
    }
    t.view = {type, vocab, dim, dim * es, t.bytes.data()};
  } else {
    testing::QuantMatrix q = testing::RandomBlocks(type, vocab, dim, seed);
    t.bytes = q.bytes;
    t.view = {type, vocab, dim, q.row_bytes, t.bytes.data()};
  }
  return t;
}

// The backend's lookup of `ids` in `host` (prepared for F32 activations as the model prepares
// token_embd: F16 stays F16, F32 stays F32, block formats stay as stored).
std::vector<float> GpuLookup(Backend& be, const WeightView& host, const std::vector<int32_t>& ids,
                             int64_t row_offset, int64_t n_vocab) {
  const DType act = host.type == GgmlType::kF16 ? DType::kF16 : DType::kF32;
  auto table = be.PrepareWeight(host, act);
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  if (!table.ok()) return {};
  const int64_t n = static_cast<int64_t>(ids.size()), dim = host.cols;
  auto dids = be.Alloc(n * 4).value();
  auto out = be.Alloc(n * dim * 4).value();
  EXPECT_TRUE(be.Upload(dids->data(), ids.data(), n * 4).ok());
  EmbeddingParams p;
  p.table = *table;
  p.ids = dids->i32();
  p.n_tokens = n;
  p.out = out->f32();
  p.row_offset = row_offset;
  p.n_vocab = n_vocab;
  const Status st = be.Embedding(p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> got(n * dim, NAN);
  EXPECT_TRUE(be.Synchronize().ok());
  EXPECT_TRUE(be.Download(got.data(), out->data(), n * dim * 4).ok());
  return got;
}

std::vector<float> RefLookup(const WeightView& host, const std::vector<int32_t>& ids,
                             int64_t row_offset, int64_t n_vocab) {
  std::vector<float> out(ids.size() * host.cols, NAN);
  EmbeddingParams p;
  p.table = host;
  p.ids = ids.data();
  p.n_tokens = static_cast<int64_t>(ids.size());
  p.out = out.data();
  p.row_offset = row_offset;
  p.n_vocab = n_vocab;
  const Status st = embedding_ref(p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// Equal values (the lookups convert or dequantize exactly as the CPU does); bit equality but for
// the sign of zero (a slice's 0 plus another's -0 is 0 where the whole lookup gives -0).
void ExpectSame(const std::vector<float>& want, const std::vector<float>& got,
                const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(want[i] == got[i]) && std::memcmp(&want[i], &got[i], 4) != 0 && ++bad <= 5) {
      ADD_FAILURE() << what << ": element " << i << " = " << got[i] << ", expected " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

class CudaEmbeddingSliceTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CudaEmbeddingSliceTest, SlicesSumToWholeLookup) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  const GgmlType type = GetParam();
  const int64_t vocab = 61, dim = 512, split = 29;  // slices [0, 29) and [29, 61)
  const HostTable t = MakeTable(type, vocab, dim, 7);
  SCOPED_TRACE(TypeName(type));
  std::vector<int32_t> ids = {0, 28, 29, 60, 5, 29, 33, 0};
  std::mt19937 rng(3);
  for (int i = 0; i < 40; ++i) ids.push_back(static_cast<int32_t>(rng() % vocab));

  const std::vector<float> whole_ref = RefLookup(t.view, ids, 0, 0);
  ExpectSame(whole_ref, GpuLookup(be, t.view, ids, 0, 0), "whole table");

  const WeightView lo = t.Rows(0, split), hi = t.Rows(split, vocab);
  const std::vector<float> got_lo = GpuLookup(be, lo, ids, 0, vocab);
  const std::vector<float> got_hi = GpuLookup(be, hi, ids, split, vocab);
  ExpectSame(RefLookup(lo, ids, 0, vocab), got_lo, "slice [0, 29)");
  ExpectSame(RefLookup(hi, ids, split, vocab), got_hi, "slice [29, 61)");
  ASSERT_EQ(got_lo.size(), whole_ref.size());
  ASSERT_EQ(got_hi.size(), whole_ref.size());
  std::vector<float> sum(whole_ref.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = got_lo[i] + got_hi[i];
  ExpectSame(whole_ref, sum, "sum of the slices");
  // The zeros really come from the slice test: each slice alone has zero rows for the others.
  for (size_t j = 0; j < ids.size(); ++j) {
    const std::vector<float>& other = ids[j] < split ? got_hi : got_lo;
    for (int64_t c = 0; c < dim; ++c) ASSERT_EQ(other[j * dim + c], 0.0f) << "id " << ids[j];
  }
}

// An id outside the vocabulary gives a row of NaN (never a read outside the table).
TEST_P(CudaEmbeddingSliceTest, IdOutsideVocabularyIsNaN) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  const GgmlType type = GetParam();
  const HostTable t = MakeTable(type, 40, 256, 9);
  SCOPED_TRACE(TypeName(type));
  const std::vector<int32_t> ids = {3, 40, -1, 25};
  const std::vector<float> got = GpuLookup(**backend, t.Rows(20, 40), ids, 20, 40);
  ASSERT_EQ(got.size(), ids.size() * 256);
  for (int64_t c = 0; c < 256; ++c) {
    EXPECT_EQ(got[c], 0.0f);                 // id 3: in the vocabulary, not in the slice
    EXPECT_TRUE(std::isnan(got[256 + c]));   // id 40 = n_vocab
    EXPECT_TRUE(std::isnan(got[512 + c]));   // id -1
    EXPECT_FALSE(std::isnan(got[768 + c]));  // id 25: row 5 of the slice
  }
}

TEST_P(CudaEmbeddingSliceTest, SliceOutsideVocabularyIsRefused) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  const HostTable t = MakeTable(GetParam(), 16, 256, 11);
  auto table = be.PrepareWeight(t.view, DType::kF32);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  auto ids = be.Alloc(4).value();
  auto out = be.Alloc(256 * 4).value();
  EmbeddingParams p;
  p.table = *table;
  p.ids = ids->i32();
  p.n_tokens = 1;
  p.out = out->f32();
  p.row_offset = 10;
  p.n_vocab = 20;  // rows 10 .. 26 of 20
  const Status st = be.Embedding(p);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
}

INSTANTIATE_TEST_SUITE_P(Types, CudaEmbeddingSliceTest,
                         ::testing::Values(GgmlType::kF16, GgmlType::kF32, GgmlType::kQ8_0,
                                           GgmlType::kQ4_K),
                         [](const ::testing::TestParamInfo<GgmlType>& i) {
                           return std::string(TypeName(i.param));
                         });

}  // namespace
}  // namespace forge
