// Generator: one request from prompt ids to streamed text on a ModelRunner: prefill in chunks, then
// decode with the Sampler until EOS, a stop token or string, max_tokens or the context's end.
// The batch-of-one use of the same ForwardBatch / KvCache path the engine batches.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "runtime/model_runner.h"
#include "sampling/sampling_params.h"
#include "sampling/stop.h"
#include "tokenizer/tokenizer.h"

namespace forge {

struct GenerateRequest {
  std::vector<int32_t> prompt;  // token ids, used verbatim
  SamplingParams params;
  uint64_t request_id = 0;
  // Constrained decoding (as EngineRequest::grammar); null: unconstrained.
  std::shared_ptr<const Grammar> grammar;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // generated text (stop string excluded)
  FinishReason finish = FinishReason::kNone;
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

struct GeneratorOptions {
  int64_t ctx_size = 0;       // 0: the model's training context
  int64_t prefill_chunk = 512;
  int block_size = 16;
};

class Generator {
 public:
  Generator(ModelRunner& model, const Tokenizer& tokenizer, GeneratorOptions options = {});

  // on_text receives each piece of text as it becomes final; returning false stops generation.
  // Errors: a prompt that does not fit in the context (with room for one token), bad params.
  StatusOr<GenerateResult> Generate(const GenerateRequest& request,
                                    const std::function<bool(std::string_view)>& on_text = {});

  int64_t ctx_size() const { return ctx_size_; }

 private:
  ModelRunner& model_;
  const Tokenizer& tokenizer_;
  GeneratorOptions options_;
  int64_t ctx_size_;
};

}  // namespace forge
