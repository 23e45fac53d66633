// Split models (name-0000K-of-0000N.gguf): written by WriteGgufSplits, opened as one by
// GgufFile::Open; missing, renamed, swapped and inconsistent shards are clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "gguf/gguf_file.h"
#include "gguf/gguf_inspect.h"
#include "gguf/gguf_split.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace forge {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> Pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

// A model with 5 tensors of several types, alignment 64, GGUF v2.
std::unique_ptr<GgufFile> MakeModel(const std::string& path) {
  GgufWriter w(2, 64);
  w.Set("general.architecture", GgufValue::String("llama"));
  w.Set("llama.block_count", GgufValue::U32(2));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"a", "b", "c"}));
  EXPECT_TRUE(w.AddTensor("token_embd.weight", GgmlType::kF32, {8, 3}, Pattern(96, 1)).ok());
  EXPECT_TRUE(w.AddTensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 4}, Pattern(136, 2)).ok());
  EXPECT_TRUE(w.AddTensor("blk.0.attn_norm.weight", GgmlType::kF32, {8}, Pattern(32, 3)).ok());
  EXPECT_TRUE(w.AddTensor("blk.1.attn_q.weight", GgmlType::kF16, {16, 4}, Pattern(128, 4)).ok());
  EXPECT_TRUE(w.AddTensor("output.weight", GgmlType::kQ4_K, {256, 2}, Pattern(288, 5)).ok());
  EXPECT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(f).value() : nullptr;
}

void ExpectSameModel(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo& x = a.tensors()[i];
    const GgufTensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dims, y.dims) << x.name;
    EXPECT_EQ(x.type, y.type) << x.name;
    ASSERT_EQ(x.n_bytes, y.n_bytes) << x.name;
    EXPECT_EQ(0, std::memcmp(x.data, y.data, x.n_bytes)) << x.name;
  }
  for (const auto& [key, value] : a.metadata()) {
    if (key.rfind("split.", 0) == 0) continue;
    const GgufValue* other = b.Find(key);
    ASSERT_NE(other, nullptr) << key;
    EXPECT_TRUE(*other == value) << key;
  }
}

TEST(GgufSplitTest, SplitNames) {
  GgufSplitName n;
  ASSERT_TRUE(ParseGgufSplitName("dir/model-00002-of-00005.gguf", &n));
  EXPECT_EQ(n.prefix, "dir/model");
  EXPECT_EQ(n.index, 2);
  EXPECT_EQ(n.count, 5);
  EXPECT_EQ(GgufSplitPath("dir/model", 2, 5), "dir/model-00002-of-00005.gguf");
  for (const char* bad :
       {"model.gguf", "model-00006-of-00005.gguf", "model-0001-of-00005.gguf",
        "model-00000-of-00005.gguf", "model-00001-of-00005.ggml", "model-000+1-of-00005.gguf"}) {
    EXPECT_FALSE(ParseGgufSplitName(bad, &n)) << bad;
  }
}

TEST(GgufSplitTest, ThreeSplitsOpenAsOne) {
  std::string dir = testing::TempDir();
  auto model = MakeModel(dir + "/whole.gguf");
  ASSERT_NE(model, nullptr);
  auto paths = WriteGgufSplits(*model, dir + "/m", {.n_splits = 3});
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  ASSERT_EQ(paths->size(), 3u);
  EXPECT_EQ((*paths)[2], dir + "/m-00003-of-00003.gguf");

  auto f = GgufFile::Open((*paths)[0]);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.shard_count(), 3);
  EXPECT_EQ(g.shard_paths(), *paths);
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.alignment(), 64u);
  ExpectSameModel(*model, g);
  // Tensors stay in order, spread 2/2/1, each pointing into its own file.
  std::vector<int> shards;
  for (const auto& t : g.tensors()) shards.push_back(t.shard);
  EXPECT_EQ(shards, (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(g.FindTensor("blk.1.attn_q.weight")->shard, 1);
  EXPECT_EQ(g.FindTensor("blk.0.attn_norm.weight")->offset, 0u);
  EXPECT_EQ(g.TotalTensorBytes(), model->TotalTensorBytes());
  // The split keys as llama.cpp's gguf-split writes them.
  EXPECT_EQ(g.Find("split.no")->type(), GgufType::kU16);
  EXPECT_EQ(g.Find("split.count")->type(), GgufType::kU16);
  EXPECT_EQ(g.Find("split.tensors.count")->type(), GgufType::kI32);
  EXPECT_EQ(*g.GetI32("split.tensors.count"), 5);
  EXPECT_NE(DescribeGguf(g).find("split files"), std::string::npos);
}

TEST(GgufSplitTest, MetadataOnlyFirstSplit) {
  std::string dir = testing::TempDir();
  auto model = MakeModel(dir + "/whole.gguf");
  ASSERT_NE(model, nullptr);
  auto paths = WriteGgufSplits(*model, dir + "/m", {.n_splits = 2, .metadata_only_first = true});
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  GgufOpenOptions alone;
  alone.load_splits = false;
  auto first = GgufFile::Open((*paths)[0], alone);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE((*first)->tensors().empty());
  auto f = GgufFile::Open((*paths)[0]);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ExpectSameModel(*model, **f);
}

TEST(GgufSplitTest, RealModelInFourSplits) {
  auto model = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::string dir = testing::TempDir();
  auto paths = WriteGgufSplits(**model, dir + "/stories", {.n_splits = 4});
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  auto f = GgufFile::Open((*paths)[0]);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->shard_count(), 4);
  EXPECT_EQ((*f)->metadata().size(), (*model)->metadata().size() + 3);
  ExpectSameModel(**model, **f);
  EXPECT_EQ(*(*f)->GetStringArray("tokenizer.ggml.tokens"),
            *(*model)->GetStringArray("tokenizer.ggml.tokens"));
}

class GgufSplitErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir();
    model_ = MakeModel(dir_ + "/whole.gguf");
    ASSERT_NE(model_, nullptr);
    auto paths = WriteGgufSplits(*model_, dir_ + "/m", {.n_splits = 3});
    ASSERT_TRUE(paths.ok()) << paths.status().ToString();
    paths_ = *paths;
  }
  std::string dir_;
  std::unique_ptr<GgufFile> model_;
  std::vector<std::string> paths_;
};

TEST_F(GgufSplitErrorTest, MissingShard) {
  fs::remove(paths_[2]);
  auto f = GgufFile::Open(paths_[0]);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("split 3 of 3 of m-00001-of-00003.gguf is missing"),
            std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find(paths_[2]), std::string::npos);
}

TEST_F(GgufSplitErrorTest, SwappedShardsHaveMismatchedSplitNo) {
  fs::rename(paths_[1], dir_ + "/tmp.gguf");
  fs::rename(paths_[2], paths_[1]);
  fs::rename(dir_ + "/tmp.gguf", paths_[2]);
  auto f = GgufFile::Open(paths_[0]);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find(paths_[1] + ": split.no/split.count are 2/3, expected 1/3"),
            std::string::npos)
      << f.status().message();
}

TEST_F(GgufSplitErrorTest, NonFirstShard) {
  auto f = GgufFile::Open(paths_[1]);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("this is split 2 of 3"), std::string::npos);
  EXPECT_NE(f.status().message().find("open the first split instead"), std::string::npos);
  // Without split loading, a shard opens alone, as it is on disk.
  GgufOpenOptions alone;
  alone.load_splits = false;
  auto g = GgufFile::Open(paths_[1], alone);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->shard_count(), 1);
  ASSERT_EQ((*g)->tensors().size(), 2u);
  EXPECT_EQ((*g)->tensors()[0].name, "blk.0.attn_norm.weight");
  EXPECT_FALSE((*g)->Has("general.architecture"));
}

TEST_F(GgufSplitErrorTest, LoadSplitsFalseOpensTheFirstShardAlone) {
  GgufOpenOptions alone;
  alone.load_splits = false;
  auto f = GgufFile::Open(paths_[0], alone);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->shard_count(), 1);
  EXPECT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ(*(*f)->GetU32("split.count"), 3u);
  // Even with the other shards gone.
  fs::remove(paths_[1]);
  EXPECT_TRUE(GgufFile::Open(paths_[0], alone).ok());
}

TEST_F(GgufSplitErrorTest, RenamedFirstShard) {
  fs::rename(paths_[0], dir_ + "/model.gguf");
  auto f = GgufFile::Open(dir_ + "/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("does not end in -00001-of-00003.gguf"), std::string::npos)
      << f.status().message();
}

// Hand-made shards with inconsistent split keys.
TEST(GgufSplitKeysTest, InconsistentKeys) {
  std::string dir = testing::TempDir();
  auto write = [&](int no, int count, int total, const std::string& tensor, bool with_no = true) {
    GgufWriter w;
    if (with_no) w.Set("split.no", GgufValue::U16(static_cast<uint16_t>(no)));
    w.Set("split.count", GgufValue::U16(static_cast<uint16_t>(count)));
    w.Set("split.tensors.count", GgufValue::I32(total));
    EXPECT_TRUE(w.AddTensor(tensor, GgmlType::kF32, {4}, Pattern(16, no)).ok());
    EXPECT_TRUE(w.WriteFile(GgufSplitPath(dir + "/k", no + 1, count)).ok());
  };
  const std::string first = GgufSplitPath(dir + "/k", 1, 2);
  auto open_error = [&]() { return GgufFile::Open(first).status(); };

  write(0, 2, 2, "a");
  write(1, 2, 2, "b");
  EXPECT_TRUE(open_error().ok()) << open_error().ToString();

  write(0, 2, 3, "a");  // split.tensors.count says 3, the files hold 2
  Status st = open_error();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("split.tensors.count is 3 but the 2 files hold 2 tensors"),
            std::string::npos)
      << st.message();

  write(0, 2, 2, "a");
  write(1, 2, 2, "a");  // the same tensor in both
  st = open_error();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("tensor 'a' is also in an earlier split"), std::string::npos)
      << st.message();

  write(1, 2, 2, "b", /*with_no=*/false);  // the second shard lacks split.no
  st = open_error();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("k-00002-of-00002.gguf: metadata key 'split.no' is missing"),
            std::string::npos)
      << st.message();

  write(0, 2, 2, "a");
  GgufWriter w;  // a first shard whose split.no is past split.count
  w.Set("split.no", GgufValue::U16(7));
  w.Set("split.count", GgufValue::U16(2));
  ASSERT_TRUE(w.WriteFile(first).ok());
  st = open_error();
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("split.no/split.count are 7/2"), std::string::npos) << st.message();
}

TEST(GgufSplitKeysTest, WriterRefusesBadCounts) {
  auto model = MakeModel(testing::TempDir() + "/whole.gguf");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(WriteGgufSplits(*model, "/nonexistent/x", {.n_splits = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteGgufSplits(*model, "/nonexistent/x", {.n_splits = 10000}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteGgufSplits(*model, "/nonexistent/x", {.n_splits = 2}).status().code(),
            StatusCode::kIoError);
}

}  // namespace
}  // namespace forge
