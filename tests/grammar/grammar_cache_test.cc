// GrammarCache: one compiled grammar per text while it is held, the least recently used dropped
// first past the entry count or the source-byte budget, errors never cached, and concurrent
// lookups of one text answered with a usable grammar.
#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "grammar/grammar_matcher.h"

namespace forge {
namespace {

std::string Literal(int i) { return "root ::= \"g" + std::to_string(i) + "\"\n"; }

TEST(GrammarCacheTest, SameTextSameGrammarUntilEvicted) {
  GrammarCacheOptions o;
  o.max_entries = 3;
  GrammarCache cache(o);
  auto a = cache.Get(Literal(0));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto again = cache.Get(Literal(0));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(a->get(), again->get());
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  // 1 and 2 fill the cache; touching 0 makes 1 the least recently used; 3 evicts it.
  ASSERT_TRUE(cache.Get(Literal(1)).ok());
  ASSERT_TRUE(cache.Get(Literal(2)).ok());
  ASSERT_TRUE(cache.Get(Literal(0)).ok());
  ASSERT_TRUE(cache.Get(Literal(3)).ok());
  EXPECT_EQ(cache.size(), 3u);
  const int64_t misses = cache.misses();
  auto zero = cache.Get(Literal(0));  // still held
  EXPECT_EQ(zero->get(), a->get());
  EXPECT_EQ(cache.misses(), misses);
  ASSERT_TRUE(cache.Get(Literal(1)).ok());  // was dropped: compiled again
  EXPECT_EQ(cache.misses(), misses + 1);
  // A grammar handed out stays usable after its entry is dropped.
  GrammarMatcher m(*a);
  EXPECT_TRUE(m.Accept("g0") && m.CanEnd());
}

TEST(GrammarCacheTest, SourceBytesAreBoundedAndErrorsAreNotCached) {
  GrammarCacheOptions o;
  o.max_source_bytes = 2 * Literal(0).size();
  GrammarCache cache(o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache.Get(Literal(i)).ok());
  EXPECT_EQ(cache.size(), 2u);
  // A text larger than the whole budget is compiled and returned, never held.
  std::string big = "root ::= \"" + std::string(3 * Literal(0).size(), 'x') + "\"\n";
  ASSERT_TRUE(cache.Get(big).ok());
  EXPECT_EQ(cache.size(), 2u);
  const size_t before = cache.size();
  EXPECT_FALSE(cache.Get("root ::= (").ok());
  EXPECT_FALSE(cache.Get("root ::= (").ok());
  EXPECT_EQ(cache.size(), before);
}

TEST(GrammarCacheTest, ConcurrentLookupsOfOneText) {
  GrammarCache cache;
  std::vector<std::thread> threads;
  std::vector<const Grammar*> got(8, nullptr);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto g = cache.Get(Literal(7));
      if (g.ok()) got[t] = g->get();
    });
  }
  for (auto& th : threads) th.join();
  for (const Grammar* g : got) EXPECT_NE(g, nullptr);
  EXPECT_EQ(cache.size(), 1u);
  // Later lookups all get the one held grammar.
  auto held = cache.Get(Literal(7));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(cache.Get(Literal(7))->get(), held->get());
}

}  // namespace
}  // namespace forge
