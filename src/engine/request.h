// What a caller gives the Engine (EngineRequest) and gets back (RequestEvent, streamed per sample
// through a callback or a RequestEvents queue), with usage counts and latencies at the end.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "sampling/stop.h"

namespace forge {

class Grammar;

using RequestId = uint64_t;

struct RequestEvent;

struct EngineRequest {
  // The prompt: token ids used verbatim when non-empty, else `prompt` tokenized with the model's
  // tokenizer (BOS as the GGUF's add_bos says).
  std::vector<int32_t> prompt_ids;
  std::string prompt;
  // An unset seed gets one at submission (returned in the handle), so the request can be
  // replayed. The sampler's key is (seed, sample index, position): sample i of a request draws
  // like Generator with request_id = i, whatever else runs.
  SamplingParams params;
  // Samples of the prompt (n > 1 forks after the prompt: its blocks are shared, copy-on-write).
  int32_t n = 1;
  // Constrained decoding: every sample's text is a prefix of a sentence of this grammar (a whole
  // one when it ends by an end-of-generation token, which is allowed exactly when the grammar
  // can end). Null: unconstrained. Needs the engine's tokenizer.
  std::shared_ptr<const Grammar> grammar;
  // Called with every event on the engine's step thread: keep it short (hand formatting and I/O
  // to another thread: the step waits for it), never call Step() from it (Submit and Cancel are
  // fine). When unset, events go to RequestHandle::events.
  std::function<void(RequestEvent)> on_event;
  // Encode the prompt instead of continuing it (a model that embeds: Engine::embeds()): one step
  // over the whole prompt, never chunked or taken from the prefix cache, then a single finished
  // event whose `embedding` is the pooled vector; params other than max_tokens are not used and
  // the KV blocks are released after the step. Engine::Submit refuses an embedding request to a
  // model that does not embed and a generation request to one that does.
  bool embed = false;
};

struct RequestUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;     // of this sample
  int64_t cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache at admission
};

struct RequestTiming {
  double queue_seconds = 0;     // submission -> first scheduled
  double ttft_seconds = 0;      // submission -> this sample's first token (0 when none)
  double mean_itl_seconds = 0;  // mean gap between this sample's tokens (0 when < 2 tokens)
  double max_itl_seconds = 0;
  double total_seconds = 0;  // submission -> finished
  int32_t preemptions = 0;   // times this sample's sequence was preempted
};

// One step's news for one sample. The last event of a sample has finished = true; after the last
// sample's, the queue closes.
struct RequestEvent {
  RequestId request_id = 0;
  int32_t sample = 0;
  std::vector<int32_t> tokens;         // new token ids (a stop token included)
  std::vector<SampleResult> logprobs;  // one per token when params.logprobs
  std::string text;                    // new final text: valid UTF-8, no stop string
  // An embedding request's pooled vector [Engine::embedding_dim()], L2-normalized (the event
  // that finishes it; finish kStop).
  std::vector<float> embedding;
  bool finished = false;
  // When finished: kStop / kLength, or kNone with a non-OK status (kCancelled when cancelled,
  // another code when the request failed).
  FinishReason finish = FinishReason::kNone;
  Status status;
  RequestUsage usage;    // when finished
  RequestTiming timing;  // when finished
};

// A thread-safe queue of one request's events.
class RequestEvents {
 public:
  void Push(RequestEvent event);
  void Close();
  // Blocks until an event arrives (true) or the queue is closed and drained (false).
  bool Next(RequestEvent* out);
  // Like Next without blocking: false when no event is ready now.
  bool TryNext(RequestEvent* out);
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
  bool closed_ = false;
};

struct RequestHandle {
  RequestId id = 0;
  uint64_t seed = 0;  // the seed used (given or picked)
  int64_t prompt_tokens = 0;
  std::shared_ptr<RequestEvents> events;  // null when the request has on_event
};

}  // namespace forge
