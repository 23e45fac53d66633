// The word vocabulary (make-model --vocab words): its words come last and are plain English words,
// every prefix a prompt needs is a token, prompts of its words tokenize into them, and a peaked
// model's successor map sends every token to a word and permutes the words.
#include "modelgen/word_vocab.h"

#include <gtest/gtest.h>

#include <set>

#include "gguf/gguf_file.h"
#include "modelgen/model_maker.h"
#include "modelgen/weight_init.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace forge {
namespace {

const std::string kSpace = "\xe2\x96\x81";

std::vector<std::string> Tokens(const MetadataList& keys) {
  for (const auto& [k, v] : keys) {
    if (k != "tokenizer.ggml.tokens") continue;
    std::vector<std::string> out;
    for (const GgufValue& t : v.items()) out.push_back(t.str());
    return out;
  }
  return {};
}

TEST(WordVocabTest, WordsComeLastAndEveryPrefixIsAToken) {
  const WordVocabInfo shape = WordVocabShape();
  const std::vector<std::string> tokens = Tokens(WordVocab());
  ASSERT_EQ(static_cast<int64_t>(tokens.size()), shape.n_vocab);
  ASSERT_GT(shape.n_vocab - shape.first_word, 500);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  const std::set<std::string> all(tokens.begin(), tokens.end());
  EXPECT_EQ(all.size(), tokens.size()) << "tokens repeat";
  for (int64_t i = shape.first_word; i < shape.n_vocab; ++i) {
    const std::string& t = tokens[i];
    ASSERT_EQ(t.rfind(kSpace, 0), 0u) << t;
    const std::string word = t.substr(kSpace.size());
    ASSERT_FALSE(word.empty());
    for (char c : word) ASSERT_TRUE(c >= 'a' && c <= 'z') << t;
    for (size_t n = 1; n < word.size(); ++n) {
      EXPECT_TRUE(all.count(kSpace + word.substr(0, n))) << "prefix of " << word;
    }
  }
}

TEST(WordVocabTest, PeakedModelTokenizesWordsAndMapsEveryTokenToAWord) {
  ModelSpec s;
  s.vocab = VocabKind::kWords;
  s.peak = 20.0f;
  const std::string path = testing::TempDir() + "/words.gguf";
  ASSERT_TRUE(MakeModel(s, path).ok());
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const WordVocabInfo shape = WordVocabShape();
  EXPECT_EQ(*(*file)->GetU64("forge.peaked.successor_first"),
            static_cast<uint64_t>(shape.first_word));
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<int32_t> ids = (*tok)->Encode("once upon a time", true, false);
  ASSERT_EQ(ids.size(), 5u);  // BOS and four words
  EXPECT_EQ(ids[0], 1);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_GE(ids[i], shape.first_word);
  EXPECT_EQ((*tok)->Decode(std::vector<int32_t>(ids.begin() + 1, ids.end()), {}),
            "once upon a time");

  ModelSpec resolved = s;
  ASSERT_TRUE(ResolveVocab(&resolved).ok());
  const WeightInit init(resolved);
  std::set<int64_t> images;
  for (int64_t t = 0; t < shape.n_vocab; ++t) {
    const int64_t next = init.Successor(t);
    ASSERT_GE(next, shape.first_word) << t;
    ASSERT_LT(next, shape.n_vocab) << t;
    if (t >= shape.first_word) {
      images.insert(next);
      EXPECT_EQ(init.Predecessor(next), t);
    } else {
      EXPECT_EQ(init.Predecessor(t), -1);
      EXPECT_EQ(next, init.Successor(init.Alias(t)));
    }
  }
  EXPECT_EQ(static_cast<int64_t>(images.size()), shape.n_vocab - shape.first_word);
  // One cycle through every word: greedy text repeats no word before all have come.
  int64_t t = shape.first_word, steps = 0;
  do {
    t = init.Successor(t);
    ++steps;
  } while (t != shape.first_word && steps <= shape.n_vocab);
  EXPECT_EQ(steps, shape.n_vocab - shape.first_word);
}

}  // namespace
}  // namespace forge
