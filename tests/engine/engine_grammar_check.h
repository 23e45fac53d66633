// Constrained decoding through the engine, checked against oracles computed another way:
//  - every token equals the host Sampler's choice on the very logits row the engine sampled from
//    (captured by the logits hook), with the allowed set found by brute force: each token's piece
//    offered to a copy of the grammar's matcher (Accept), never FillMask, the way the engine
//    builds it;
//  - texts that ended by an end-of-generation token validate against their JSON schema with
//    Debian's python3-jsonschema, or match their regular expression with python3-regex;
//  - requests run together, with forks (n > 1), stop strings, min_tokens / ignore_eos, and again
//    through a KV pool so small that sequences are preempted: the same tokens come out.
// Shared by the CPU engine test and its CUDA twin.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_test_util.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocab.h"
#include "support/test_env.h"

namespace forge::testing {

struct ConstrainedCase {
  std::string what;
  std::string schema;  // a JSON schema (validated by python3-jsonschema), or
  std::string gbnf;    // a GBNF grammar whose language is `regex` (python3-regex fullmatch)
  std::string regex;
  SamplingParams params;
  int32_t n = 1;
};

inline std::vector<ConstrainedCase> ConstrainedCases() {
  const std::string person = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 10},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3}},
    "required": ["name", "age"]})";
  const std::string answer = R"(root ::= ("yes" | "no") " " [0-9] [0-9]? [0-9]?)";
  std::vector<ConstrainedCase> cases;
  auto add = [&](std::string what, std::string schema, std::string gbnf, std::string regex,
                 auto set, int32_t n = 1) {
    ConstrainedCase c;
    c.what = std::move(what);
    c.schema = std::move(schema);
    c.gbnf = std::move(gbnf);
    c.regex = std::move(regex);
    c.params.max_tokens = 200;
    c.params.seed = 7 + cases.size();
    set(c.params);
    c.n = n;
    cases.push_back(std::move(c));
  };
  add("schema sampled", person, "", "", [](SamplingParams& p) { p.temperature = 1.0; });
  add("schema forked", person, "", "", [](SamplingParams& p) {
    p.temperature = 1.3;
    p.top_k = 50;
  }, /*n=*/3);
  add("schema greedy with logprobs", person, "", "", [](SamplingParams& p) {
    p.temperature = 0.0;
    p.logprobs = true;
    p.top_logprobs = 3;
  });
  add("json_object cut by max_tokens", "{\"type\": \"object\"}", JsonObjectGbnf(), "",
      [](SamplingParams& p) {
        p.temperature = 1.0;
        p.max_tokens = 9;
      });
  add("gbnf with min_tokens and ignore_eos", "", answer, "(yes|no) [0-9]{1,3}",
      [](SamplingParams& p) {
        p.temperature = 1.0;
        p.min_tokens = 40;  // more than the grammar allows: the end is still taken
        p.ignore_eos = true;
      });
  add("gbnf with penalties", "", answer, "(yes|no) [0-9]{1,3}", [](SamplingParams& p) {
    p.temperature = 0.8;
    p.repetition_penalty = 1.3;
    p.logit_bias = {{3, 4.0f}};
  });
  add("schema with a stop string", person, "", "", [](SamplingParams& p) {
    p.temperature = 1.0;
    p.stop = {"\"age\""};
  });
  return cases;
}

struct ConstrainedSample {
  struct Row {
    std::vector<float> logits;
  };
  std::vector<Row> rows;
  std::vector<int32_t> tokens;
  std::vector<SampleResult> logprobs;
  std::string text;
  bool finished = false;
  FinishReason finish = FinishReason::kNone;
  Status status;
};

struct ConstrainedRun {
  std::vector<std::vector<ConstrainedSample>> samples;  // [case][sample]
  std::vector<std::vector<int32_t>> prompts;
  EngineStats stats;
};

// Runs every case (and an unconstrained request between them) through one engine together.
inline ConstrainedRun RunConstrained(ModelRunner& model, const Tokenizer& tokenizer,
                                     const std::vector<ConstrainedCase>& cases,
                                     const std::vector<std::shared_ptr<const Grammar>>& grammars,
                                     int32_t kv_blocks) {
  ConstrainedRun run;
  run.samples.resize(cases.size() + 1);
  std::map<RequestId, size_t> index;
  EngineOptions o;
  o.ctx_size = 512;
  o.num_kv_blocks = kv_blocks;
  o.block_size = 16;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 128;
  o.seed_source = 1;
  o.check_invariants = true;
  o.logits_hook = [&](const LogitsRow& row) {
    run.samples[index.at(row.request_id)][row.sample].rows.push_back(
        {{row.logits.begin(), row.logits.end()}});
  };
  auto engine = Engine::Create(model, &tokenizer, o);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return run;
  for (size_t i = 0; i <= cases.size(); ++i) {
    EngineRequest r;
    r.prompt = i < cases.size() ? "Once upon a time, " + cases[i].what : "The little dog";
    if (i < cases.size()) {
      r.params = cases[i].params;
      r.n = cases[i].n;
      r.grammar = grammars[i];
    } else {
      r.params.temperature = 0.0;
      r.params.max_tokens = 60;
    }
    run.samples[i].resize(r.n);
    r.on_event = [&run, i](const RequestEvent& ev) {
      ConstrainedSample& s = run.samples[i][ev.sample];
      s.tokens.insert(s.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      s.logprobs.insert(s.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
      s.text += ev.text;
      if (ev.finished) {
        s.finished = true;
        s.finish = ev.finish;
        s.status = ev.status;
      }
    };
    auto h = (*engine)->Submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return run;
    index[h->id] = i;
    run.prompts.push_back(tokenizer.Encode(i < cases.size() ? "Once upon a time, " + cases[i].what
                                                            : "The little dog",
                                           true, false));
  }
  const Status s = (*engine)->RunUntilIdle();
  EXPECT_TRUE(s.ok()) << s.ToString();
  run.stats = (*engine)->stats();
  EXPECT_EQ(run.stats.kv_blocks_used, 0);
  return run;
}

// The allowed set after `matcher`'s text, by offering each token's piece to a copy of it.
inline std::vector<uint32_t> BruteForceAllowed(const GrammarMatcher& matcher,
                                               const TokenVocabView& vocab, int32_t n_vocab) {
  std::vector<uint32_t> allowed((n_vocab + 31) / 32, 0);
  for (int32_t t = 0; t < n_vocab && t < vocab.size(); ++t) {
    bool ok;
    if (vocab.IsEnd(t)) {
      ok = matcher.CanEnd();
    } else {
      GrammarMatcher copy = matcher;
      ok = !vocab.piece(t).empty() && copy.Accept(vocab.piece(t));
    }
    if (ok) allowed[t >> 5] |= 1u << (t & 31);
  }
  return allowed;
}

// batch_invariant: the backend's logits do not depend on what else is in the batch (the CPU), so
// a preempted run must give the very same tokens; else it must give valid ones. python_oracles:
// Debian's python3-jsonschema and python3-regex are installed (CI; the GPU machine has neither:
// there the brute-force replay is the oracle).
inline void ExpectConstrainedGeneration(ModelRunner& model, const Tokenizer& tokenizer,
                                        bool batch_invariant, bool python_oracles = true) {
  const std::vector<ConstrainedCase> cases = ConstrainedCases();
  std::vector<std::shared_ptr<const Grammar>> grammars;
  for (const ConstrainedCase& c : cases) {
    auto g = c.gbnf.empty() ? GrammarFromJsonSchema(c.schema) : Grammar::FromGbnf(c.gbnf);
    ASSERT_TRUE(g.ok()) << c.what << ": " << g.status().ToString();
    grammars.push_back(*g);
  }
  const ConstrainedRun run = RunConstrained(model, tokenizer, cases, grammars, 512);
  ASSERT_EQ(run.prompts.size(), cases.size() + 1);

  const auto vocab = TokenVocabView::FromTokenizer(tokenizer);
  const int32_t n_vocab = static_cast<int32_t>(model.config().n_vocab);
  const std::vector<int32_t> eos(tokenizer.vocab().eog.begin(), tokenizer.vocab().eog.end());
  Sampler sampler(n_vocab);
  nlohmann::json schema_jobs = nlohmann::json::array(), regex_jobs = nlohmann::json::array();
  int64_t checked = 0, ended = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConstrainedCase& c = cases[i];
    nlohmann::json docs = nlohmann::json::array();
    for (int32_t k = 0; k < c.n; ++k) {
      const ConstrainedSample& s = run.samples[i][k];
      SCOPED_TRACE(c.what + ", sample " + std::to_string(k) + ": " + s.text);
      ASSERT_TRUE(s.finished);
      ASSERT_TRUE(s.status.ok()) << s.status.ToString();
      ASSERT_FALSE(s.tokens.empty());
      const size_t skip = s.rows.size() < s.tokens.size() ? s.tokens.size() - s.rows.size() : 0;
      ASSERT_EQ(s.rows.size() + skip, s.tokens.size());
      GrammarMatcher matcher(grammars[i]);
      for (size_t j = 0; j < s.tokens.size(); ++j) {
        const auto* row = j >= skip ? &s.rows[j - skip] : (j == 0 ? &run.samples[i][0].rows[0]
                                                                  : nullptr);
        ASSERT_NE(row, nullptr);
        const std::vector<uint32_t> allowed = BruteForceAllowed(matcher, *vocab, n_vocab);
        bool other = false;
        for (int32_t t = 0; t < n_vocab && !other; ++t) {
          other = ((allowed[t >> 5] >> (t & 31)) & 1) && !vocab->IsEnd(t);
        }
        SampleContext ctx;
        ctx.request_id = static_cast<uint64_t>(k);
        ctx.prompt = run.prompts[i];
        ctx.generated = std::span<const int32_t>(s.tokens.data(), j);
        ctx.eos_ids = eos;
        ctx.allowed = allowed;
        ctx.only_end_allowed = !other;
        auto want = sampler.Sample(c.params, ctx, row->logits);
        ASSERT_TRUE(want.ok()) << "token " << j << ": " << want.status().ToString();
        ASSERT_EQ(s.tokens[j], want->token) << "token " << j;
        if (c.params.logprobs) {
          ASSERT_EQ(s.logprobs.size(), s.tokens.size());
          EXPECT_NEAR(s.logprobs[j].logprob, want->logprob, 1e-9) << "token " << j;
        }
        ASSERT_TRUE(matcher.AcceptToken(*vocab, s.tokens[j])) << "token " << j;
        ++checked;
      }
      // Ended by the grammar's end: a whole sentence of it; by max_tokens: a prefix (above).
      const bool by_end = s.finish == FinishReason::kStop && vocab->IsEnd(s.tokens.back());
      if (c.params.max_tokens < 20) {
        EXPECT_EQ(s.finish, FinishReason::kLength);
      }
      if (!c.params.stop.empty()) {
        EXPECT_EQ(s.text.find(c.params.stop[0]), std::string::npos);
      }
      if (by_end) {
        ++ended;
        EXPECT_TRUE(matcher.IsTerminated());
        docs.push_back(s.text);
      }
    }
    if (docs.empty()) continue;
    if (!c.regex.empty()) {
      regex_jobs.push_back({{"regex", c.regex}, {"strings", docs}});
    } else {
      schema_jobs.push_back({{"schema", nlohmann::json::parse(c.schema)}, {"docs", docs}});
    }
  }
  EXPECT_GT(checked, 150);
  EXPECT_GE(ended, 5) << "too few samples ended by the grammar to validate";
  // The unconstrained request beside them ran as it would alone: nothing masked its tokens.
  const ConstrainedSample& free = run.samples[cases.size()][0];
  ASSERT_TRUE(free.finished && free.status.ok());
  for (size_t j = 0; j < free.tokens.size(); ++j) {
    SampleContext ctx;
    ctx.prompt = run.prompts[cases.size()];
    ctx.generated = std::span<const int32_t>(free.tokens.data(), j);
    ctx.eos_ids = eos;
    SamplingParams greedy;
    greedy.temperature = 0.0;
    auto want = sampler.Sample(greedy, ctx, free.rows[j].logits);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(free.tokens[j], want->token) << "unconstrained token " << j;
  }

  const nlohmann::json result =
      python_oracles ? RunGrammarOracle({{"jsonschema", schema_jobs}, {"fullmatch", regex_jobs}})
                     : nlohmann::json{{"jsonschema", nlohmann::json::array()},
                                      {"fullmatch", nlohmann::json::array()}};
  ASSERT_FALSE(result.is_null());
  if (!python_oracles) schema_jobs = regex_jobs = nlohmann::json::array();
  for (size_t q = 0; q < schema_jobs.size(); ++q) {
    for (size_t d = 0; d < schema_jobs[q]["docs"].size(); ++d) {
      const auto& verdict = result["jsonschema"][q][d];
      EXPECT_TRUE(verdict["valid"].get<bool>())
          << schema_jobs[q]["docs"][d] << ": " << verdict.value("error", std::string());
    }
  }
  for (size_t q = 0; q < regex_jobs.size(); ++q) {
    for (size_t d = 0; d < regex_jobs[q]["strings"].size(); ++d) {
      EXPECT_TRUE(result["fullmatch"][q][d].get<bool>())
          << regex_jobs[q]["strings"][d] << " does not match " << regex_jobs[q]["regex"];
    }
  }

  // Preempted and recomputed (a pool of 24 blocks for 10 sequences of up to 14 blocks): the
  // grammar state is kept with the sample, so the same tokens come out.
  const ConstrainedRun tight = RunConstrained(model, tokenizer, cases, grammars, 24);
  EXPECT_GT(tight.stats.preemptions, 0);
  for (size_t i = 0; i <= cases.size(); ++i) {
    for (size_t k = 0; k < run.samples[i].size(); ++k) {
      const ConstrainedSample& s = tight.samples[i][k];
      EXPECT_TRUE(s.finished && s.status.ok()) << s.status.ToString();
      if (batch_invariant) {
        EXPECT_EQ(s.tokens, run.samples[i][k].tokens)
            << "case " << i << " sample " << k << " after preemption";
        EXPECT_EQ(s.finish, run.samples[i][k].finish);
      } else if (i < cases.size()) {
        GrammarMatcher matcher(grammars[i]);
        for (int32_t t : s.tokens) {
          ASSERT_TRUE(matcher.AcceptToken(*vocab, t)) << "case " << i << " sample " << k;
        }
      }
    }
  }
}

}  // namespace forge::testing
