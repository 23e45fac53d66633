// Generator::Generate.
#include "engine/generator.h"

#include <chrono>
#include <numeric>
#include <optional>

#include "engine/constrained_sample.h"
#include "engine/sample_rows.h"
#include "tokenizer/detokenizer.h"

namespace forge {

Generator::Generator(ModelRunner& model, const Tokenizer& tokenizer, GeneratorOptions options)
    : model_(model), tokenizer_(tokenizer), options_(options) {
  ctx_size_ = options.ctx_size > 0 ? options.ctx_size : model.config().n_ctx_train;
}

StatusOr<GenerateResult> Generator::Generate(const GenerateRequest& req,
                                             const std::function<bool(std::string_view)>& on_text) {
  RETURN_IF_ERROR(req.params.Validate());
  RETURN_IF_ERROR(model_.CheckHasLogits());  // an embedding model generates nothing
  const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) return InvalidArgumentError("empty prompt");
  if (n_prompt >= ctx_size_) {
    return InvalidArgumentError("prompt of " + std::to_string(n_prompt) +
                                " tokens does not fit in the context of " +
                                std::to_string(ctx_size_) + " tokens");
  }
  for (int32_t id : req.prompt) {
    if (id < 0 || id >= model_.config().n_vocab) {
      return InvalidArgumentError("prompt token id " + std::to_string(id) +
                                  " is outside the vocabulary of " +
                                  std::to_string(model_.config().n_vocab));
    }
  }
  int64_t max_new = ctx_size_ - n_prompt;
  if (req.params.max_tokens >= 0) max_new = std::min<int64_t>(max_new, req.params.max_tokens);

  const int bs = options_.block_size;
  const int64_t blocks = (n_prompt + max_new + bs - 1) / bs;
  ASSIGN_OR_RETURN(auto cache, model_.CreateKvCache(blocks, bs));
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);

  GenerateResult result;
  result.prompt_tokens = n_prompt;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t pos = 0; pos < n_prompt; pos += options_.prefill_chunk) {
    const int64_t len = std::min<int64_t>(options_.prefill_chunk, n_prompt - pos);
    ForwardBatch b;
    b.block_size = bs;
    RETURN_IF_ERROR(b.AddSequence({req.prompt.begin() + pos, req.prompt.begin() + pos + len},
                                  static_cast<int32_t>(pos), table));
    b.Finish();
    RETURN_IF_ERROR(model_.Forward(b, *cache, nullptr));  // logits stay for Sample
  }
  auto t1 = std::chrono::steady_clock::now();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  SampleRows rows;  // one row, sampled where the logits are
  std::vector<SampleOut> out;
  const std::vector<int32_t> eos(tokenizer_.vocab().eog.begin(), tokenizer_.vocab().eog.end());
  std::shared_ptr<const TokenVocabView> grammar_vocab;
  std::optional<GrammarMatcher> matcher;
  std::vector<uint32_t> mask;
  if (req.grammar) {
    grammar_vocab = TokenVocabView::FromTokenizer(tokenizer_);
    matcher.emplace(req.grammar);
  }
  DecodeOptions dopt;
  dopt.strip_leading_space = false;  // a continuation of the prompt's text
  StreamingDetokenizer detok(tokenizer_, dopt);
  StopStringMatcher stops(req.params.stop);
  std::string text;  // all generated text so far
  size_t emitted = 0, scanned = 0;
  bool cancelled = false;
  while (result.finish == FinishReason::kNone && !cancelled) {
    if (static_cast<int64_t>(result.tokens.size()) >= max_new) {
      result.finish = FinishReason::kLength;
      break;
    }
    SampleContext ctx{req.request_id, req.prompt, result.tokens, eos};
    if (matcher) RETURN_IF_ERROR(ConstrainSample(*matcher, *grammar_vocab, n_vocab, &mask, &ctx));
    rows.clear();
    RETURN_IF_ERROR(rows.Append(req.params, ctx, n_vocab));
    RETURN_IF_ERROR(model_.Sample(rows.rows, rows.edits, &out, rows.allowed, rows.allowed_words));
    ASSIGN_OR_RETURN(SampleResult s, ToSampleResult(out[0], req.params));
    if (matcher && !AdvanceGrammar(*matcher, *grammar_vocab, s.token)) {
      return InternalError("token " + std::to_string(s.token) +
                           " was sampled but the grammar does not allow it");
    }
    result.tokens.push_back(s.token);
    result.finish = CheckTokenStop(req.params, eos, result.tokens);
    if (result.finish == FinishReason::kNone && matcher && matcher->IsTerminated()) {
      result.finish = FinishReason::kStop;
    }
    if (result.finish != FinishReason::kStop) {  // a stopping token adds no text
      text += detok.Push(s.token);
    }
    if (result.finish != FinishReason::kNone) text += detok.Finish();
    StopScan scan = stops.Scan(text, scanned);
    scanned = text.size();
    size_t final_end = scan.emit_end;
    if (scan.stopped) {
      text.resize(scan.emit_end);
      result.finish = FinishReason::kStop;
    } else if (result.finish != FinishReason::kNone) {
      final_end = text.size();  // nothing more can complete a stop string
    }
    if (final_end > emitted) {
      if (on_text && !on_text(std::string_view(text).substr(emitted, final_end - emitted))) {
        cancelled = true;
      }
      emitted = final_end;
    }
    if (result.finish != FinishReason::kNone || cancelled) break;
    if (static_cast<int64_t>(result.tokens.size()) >= max_new) {
      result.finish = FinishReason::kLength;
      break;
    }
    const int32_t pos = static_cast<int32_t>(n_prompt + result.tokens.size() - 1);
    ForwardBatch b;
    b.block_size = bs;
    RETURN_IF_ERROR(b.AddSequence({s.token}, pos, table));
    b.Finish();
    RETURN_IF_ERROR(model_.Forward(b, *cache, nullptr));
  }
  if (result.finish == FinishReason::kLength && emitted < text.size()) {
    std::string rest = text.substr(emitted) + detok.Finish();
    if (on_text && !rest.empty()) on_text(rest);
    text = text.substr(0, emitted) + rest;
  }
  result.text = std::move(text);
  result.decode_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return result;
}

}  // namespace forge
