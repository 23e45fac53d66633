// Whole quantized models on the GPU, the weights kept in their stored blocks on the device,
// against the CPU backend (F32 activations over the same dequantized weights): synthetic models
// of every block format and the Q4_K_M mix, teacher-forced logits within DESIGN's
// half-precision bound (1e-2) for F16 activations, token by token (the quantized GEMV: one
// activation row) and in chunks of 17 (the prefill path: dequantized slabs and cuBLAS), a
// 300-token prompt through an 8192-wide FFN (ffn_down on the fused quantized GEMM), and
// batched decode steps through captured graphs. The device holds about the file's bytes.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/matmul/gemm_quant_cuda.h"
#include "backend/cuda/matmul/matmul_dispatch.h"
#include "gguf/gguf_file.h"
#include "modelgen/model_maker.h"
#include "runtime/teacher_forced.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr double kBound = 1e-2;  // DESIGN.md, half precision

std::string MakeQuantModel(const std::string& format, int64_t n_ff = 768, int64_t n_layer = 2) {
  ModelSpec spec;
  spec.arch = "llama";
  spec.name = "quant-" + format + "-ff" + std::to_string(n_ff);
  spec.n_embd = 256;  // one k-quant super-block per 256 columns
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = n_ff;
  spec.n_layer = n_layer;
  spec.n_vocab = 512;
  EXPECT_TRUE(SetWeightFormat(format, &spec).ok()) << format;
  const std::string path = testing::TempDir() + "/" + spec.name + ".gguf";
  auto st = MakeModel(spec, path);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  return path;
}

std::vector<int32_t> Tokens(int n, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 89 + seed * 37 + 5) % 512);
  return ids;
}

class CudaQuantModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaQuantModelTest, TeacherForcedWithinBoundOneByOneAndChunked) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const std::string path = MakeQuantModel(GetParam());
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  auto cpu = MakeCpuBackend();
  int64_t free0 = 0, total = 0;
  (*gpu)->MemoryInfo(&free0, &total);
  auto mg = ModelRunner::Load(path, gpu->get(), {}, {DType::kF16});
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mg.ok() && mc.ok()) << mg.status().ToString() << mc.status().ToString();
  // The weights stay quantized: the device holds the matrices' stored bytes, not F16 copies.
  int64_t free1 = 0;
  (*gpu)->MemoryInfo(&free1, &total);
  const int64_t stored = WeightMatrixBytes((*mc)->host_weights(), /*with_token_embd=*/true);
  const int64_t as_f16 = [&] {
    int64_t b = 0;
    const ModelWeights& w = (*mc)->host_weights();
    b += w.token_embd.rows * w.token_embd.cols * 2 + w.output.rows * w.output.cols * 2;
    for (const LayerWeights& l : w.layers) {
      for (const WeightView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        b += v->rows * v->cols * 2;
      }
    }
    return b;
  }();
  EXPECT_LT(WeightMatrixBytes((*mg)->weights(), true), as_f16 * 3 / 4)
      << "prepared weights are no smaller than F16";
  EXPECT_LE(WeightMatrixBytes((*mg)->weights(), true), stored + (int64_t{1} << 20));
  EXPECT_LT(free0 - free1, int64_t{512} << 20);  // weights, scratch and buffers of a tiny model

  const std::vector<int32_t> ids = Tokens(40, 3);
  auto ref = TeacherForcedLogits(**mc, ids);
  auto one = TeacherForcedLogits(**mg, ids, 1);
  auto chunked = TeacherForcedLogits(**mg, ids, 17);
  ASSERT_TRUE(ref.ok() && one.ok() && chunked.ok());
  EXPECT_NORMALIZED_NEAR(ref->data(), one->data(), ref->size(), kBound) << "GEMV path vs CPU";
  EXPECT_NORMALIZED_NEAR(ref->data(), chunked->data(), ref->size(), kBound)
      << "prefill path vs CPU";
}

// A prompt of 448 tokens in one forward with an 8192-wide FFN: every matmul, ffn_down (k = 8192)
// included, dequantizes its weights into one scratch slab for cuBLAS (gemm_quant declines
// false at 448 rows).
TEST_P(CudaQuantModelTest, LongFfnPrefillWithinBound) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const std::string path = MakeQuantModel(GetParam(), 8192, 1);
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  auto cpu = MakeCpuBackend();
  auto mg = ModelRunner::Load(path, gpu->get(), {}, {DType::kF16});
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mg.ok() && mc.ok()) << mg.status().ToString() << mc.status().ToString();
  const WeightView& down = (*mg)->weights().layers[0].w_down;
  alignas(16) static uint8_t dummy[16];  // never dereferenced
  MatmulParams probe{dummy, 0, down, nullptr, dummy, 0, 448};
  probe.x_type = DType::kF16;
  probe.out_type = DType::kF16;
  ASSERT_EQ(down.cols, 8192);
  ASSERT_FALSE(cuda::MatmulVariantTakes("gemm_quant", probe)) << "the backend would take the fused GEMM";
  const std::vector<int32_t> ids = Tokens(448, 5);
  auto ref = TeacherForcedLogits(**mc, ids);
  auto got = TeacherForcedLogits(**mg, ids, 448);
  ASSERT_TRUE(ref.ok() && got.ok()) << ref.status().ToString() << got.status().ToString();
  EXPECT_NORMALIZED_NEAR(ref->data(), got->data(), ref->size(), kBound) << "long-FFN prefill";
}

TEST_P(CudaQuantModelTest, BatchedDecodeStepsThroughGraphsWithinBound) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const std::string path = MakeQuantModel(GetParam());
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok());
  auto cpu = MakeCpuBackend();
  auto mg = ModelRunner::Load(path, gpu->get(), {}, {DType::kF16});
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mg.ok() && mc.ok());
  // 3 sequences and 20 (> the GEMV's 16 rows): decode steps of both matmul paths, replayed.
  for (int n : {3, 20}) {
    SCOPED_TRACE("sequences " + std::to_string(n));
    auto run = [&](ModelRunner& m) {
      auto cache = KvCache::Create(m.backend(), m.CacheShape(4 * n, 16));
      EXPECT_TRUE(cache.ok());
      std::vector<std::vector<int32_t>> tables(n);
      std::vector<int> len(n);
      std::vector<float> logits, all;
      for (int s = 0; s < n; ++s) {
        for (int b = 0; b < 4; ++b) tables[s].push_back(b * n + s);
        len[s] = 3 + 2 * s;
        ForwardBatch fb;
        fb.block_size = 16;
        EXPECT_TRUE(fb.AddSequence(Tokens(len[s], s), 0, tables[s]).ok());
        fb.Finish();
        EXPECT_TRUE(m.Forward(fb, **cache, &logits).ok());
      }
      for (int step = 0; step < 6; ++step) {
        ForwardBatch fb;
        fb.block_size = 16;
        for (int s = 0; s < n; ++s) {
          EXPECT_TRUE(fb.AddSequence({(step * 13 + s * 7 + 1) % 512}, len[s]++, tables[s]).ok());
        }
        fb.Finish();
        Status st = m.Forward(fb, **cache, &logits);
        EXPECT_TRUE(st.ok()) << st.ToString();
        all.insert(all.end(), logits.begin(), logits.end());
      }
      return all;
    };
    const int64_t replays0 = (*mg)->stats().graph_replays;
    auto got = run(**mg);
    auto ref = run(**mc);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_GT((*mg)->stats().graph_replays, replays0) << "decode steps were replayed";
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), static_cast<int64_t>(ref.size()), kBound);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, CudaQuantModelTest,
                         ::testing::Values("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k",
                                           "q4_k", "q5_k", "q6_k", "q4_k_m"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace forge
