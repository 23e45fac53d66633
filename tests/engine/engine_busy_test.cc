// The engine's busy brackets: every backend op of a step (forward, copy-on-write copies,
// sampling, a fork's logits download) runs between MarkBusyBegin and MarkBusyEnd, the marks
// pair up, and EngineStats' device busy seconds grow with the steps and stay within their wall
// time (on the CPU the brackets are host time inside the steps).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace forge::testing {
namespace {

// The CPU backend, counting queued work inside and outside busy brackets.
class BracketCheckingBackend : public Backend {
 public:
  std::string name() const override { return inner_->name(); }
  StatusOr<std::unique_ptr<BackendBuffer>> Alloc(size_t bytes) override {
    return inner_->Alloc(bytes);
  }
  Status Upload(void* dst, const void* src, size_t bytes) override {
    Work();
    return inner_->Upload(dst, src, bytes);
  }
  Status Download(void* dst, const void* src, size_t bytes) override {
    Work();
    return inner_->Download(dst, src, bytes);
  }
  Status Copy(void* dst, const void* src, size_t bytes) override {
    Work();
    ++copies;
    return inner_->Copy(dst, src, bytes);
  }
  Status Synchronize() override {
    Work();
    return inner_->Synchronize();
  }
  void MarkBusyBegin() override {
    EXPECT_FALSE(open_) << "a bracket opened inside another";
    open_ = true;
    ++begins;
    inner_->MarkBusyBegin();
  }
  void MarkBusyEnd() override {
    EXPECT_TRUE(open_) << "a bracket closed without being opened";
    open_ = false;
    ++ends;
    inner_->MarkBusyEnd();
  }
  double BusySeconds() override { return inner_->BusySeconds(); }
  DType DefaultActivationType(GgmlType t) const override {
    return inner_->DefaultActivationType(t);
  }
  bool SupportsActivationType(DType d) const override { return inner_->SupportsActivationType(d); }
  StatusOr<WeightView> PrepareWeight(const WeightView& host, DType act) override {
    return inner_->PrepareWeight(host, act);
  }
  int64_t PreparedWeightBytes(const WeightView& host, DType act) const override {
    return inner_->PreparedWeightBytes(host, act);
  }
  StatusOr<const float*> PrepareVector(const float* host, int64_t n) override {
    return inner_->PrepareVector(host, n);
  }
  Status Embedding(const EmbeddingParams& p) override { return Op(inner_->Embedding(p)); }
  Status RmsNorm(const RmsNormParams& p) override { return Op(inner_->RmsNorm(p)); }
  Status AddRmsNorm(const AddRmsNormParams& p) override { return Op(inner_->AddRmsNorm(p)); }
  Status LayerNorm(const LayerNormParams& p) override { return Op(inner_->LayerNorm(p)); }
  Status Pool(const PoolParams& p) override { return Op(inner_->Pool(p)); }
  Status Matmul(const MatmulParams& p) override { return Op(inner_->Matmul(p)); }
  Status Rope(const RopeParams& p) override { return Op(inner_->Rope(p)); }
  Status KvWrite(const KvWriteParams& p) override { return Op(inner_->KvWrite(p)); }
  Status RopeKvWrite(const RopeKvWriteParams& p) override { return Op(inner_->RopeKvWrite(p)); }
  Status Attention(const AttentionParams& p) override { return Op(inner_->Attention(p)); }
  Status Swiglu(const SwigluParams& p) override { return Op(inner_->Swiglu(p)); }
  Status Add(const AddParams& p) override { return Op(inner_->Add(p)); }
  Status SoftCap(const SoftCapParams& p) override { return Op(inner_->SoftCap(p)); }
  Status Route(const RouteParams& p) override { return Op(inner_->Route(p)); }
  Status ExpertSum(const ExpertSumParams& p) override { return Op(inner_->ExpertSum(p)); }
  Status GatherRows(const GatherRowsParams& p) override { return Op(inner_->GatherRows(p)); }
  Status Sample(const SampleParams& p) override {
    ++samples;
    return Op(inner_->Sample(p));
  }

  bool counting = false;  // off while the model loads
  std::atomic<int64_t> inside{0}, outside{0}, begins{0}, ends{0}, copies{0}, samples{0};

 private:
  void Work() {
    if (counting) ++(open_ ? inside : outside);
  }
  Status Op(Status s) {
    Work();
    return s;
  }

  std::unique_ptr<Backend> inner_ = MakeCpuBackend();
  bool open_ = false;
};

TEST(EngineBusyTest, EveryOpOfAStepIsInsideABracket) {
  BracketCheckingBackend be;
  auto model = ModelRunner::Load(TestDataPath("models/stories260K.gguf"), &be);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto engine = Engine::Create(**model, Stories260K().tokenizer.get(), TestOptions(64, 8, 64));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  be.counting = true;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 3; ++i) {
    EngineRequest r;
    r.prompt = "Once upon a time there was a little " + std::to_string(i);
    r.params.max_tokens = 12;
    r.params.ignore_eos = true;
    r.params.temperature = 0.8;
    r.params.seed = 7 + i;
    r.n = i == 0 ? 2 : 1;  // a fork: a logits row downloaded, a partial block copied on write
    auto h = (*engine)->Submit(std::move(r));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    handles.push_back(*h);
  }
  const EngineStats before = (*engine)->stats();
  EXPECT_EQ(before.device_busy_seconds, 0.0);
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  const EngineStats s = (*engine)->stats();

  EXPECT_GT(be.inside.load(), 0);
  EXPECT_EQ(be.outside.load(), 0) << "backend work outside a busy bracket";
  EXPECT_EQ(be.begins.load(), be.ends.load());
  EXPECT_GE(be.begins.load(), 2 * s.steps);  // at least the forward and the sampling of each
  EXPECT_GT(be.copies.load(), 0);            // the copy-on-write path ran
  EXPECT_GT(be.samples.load(), 0);
  EXPECT_EQ(s.generation_tokens, 4 * 12);
  // The brackets' host time, all of it inside the steps' wall time.
  EXPECT_GT(s.device_busy_seconds, 0.0);
  EXPECT_DOUBLE_EQ(s.device_busy_seconds, be.BusySeconds());
  EXPECT_LE(s.device_busy_seconds, s.busy_seconds);
  EXPECT_GT(s.device_busy_ratio, 0.0);
  EXPECT_LE(s.device_busy_ratio, 1.0);

  // Idle: nothing more is counted.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ((*engine)->stats().device_busy_seconds, s.device_busy_seconds);
}

TEST(EngineBusyTest, BusySecondsGrowWhileTheLoopThreadRuns) {
  {
    // An earlier engine's steps on the same backend: not the next engine's.
    auto earlier =
        Engine::Create(*Stories260K().model, Stories260K().tokenizer.get(), TestOptions(64, 8, 64));
    ASSERT_TRUE(earlier.ok());
    EngineRequest r;
    r.prompt = "Once upon a time";
    r.params.max_tokens = 40;
    r.params.ignore_eos = true;
    ASSERT_TRUE((*earlier)->Submit(std::move(r)).ok());
    ASSERT_TRUE((*earlier)->RunUntilIdle().ok());
    EXPECT_GT((*earlier)->stats().device_busy_seconds, 0);
  }
  auto engine =
      Engine::Create(*Stories260K().model, Stories260K().tokenizer.get(), TestOptions(64, 8, 64));
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ((*engine)->stats().device_busy_seconds, 0);
  (*engine)->Start();
  double last = (*engine)->stats().device_busy_seconds;
  for (int round = 0; round < 2; ++round) {
    EngineRequest r;
    r.prompt = "One day " + std::to_string(round);
    r.params.max_tokens = 8;
    r.params.ignore_eos = true;
    auto h = (*engine)->Submit(std::move(r));
    ASSERT_TRUE(h.ok());
    RequestEvent ev;
    while (h->events->Next(&ev)) {
    }
    // Published at the end of the step that finished the request; give the loop a moment.
    double now = last;
    for (int i = 0; i < 200 && now <= last; ++i) {
      now = (*engine)->stats().device_busy_seconds;
      if (now <= last) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GT(now, last) << "round " << round;
    last = now;
  }
  (*engine)->Stop();
  // Only this engine's brackets, all inside its steps.
  const EngineStats s = (*engine)->stats();
  EXPECT_LE(s.device_busy_seconds, s.busy_seconds);
}

}  // namespace
}  // namespace forge::testing
