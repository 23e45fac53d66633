// libFuzzer target for the HTTP layer, no model needed: bytes as a client would send them go
// through HttpParser (fed in pieces whose sizes the input picks), each whole request through
// MatchRoute, and each JSON body through ParseJsonBody, ParseCompletionRequest (both the
// completions and the chat shapes; their output constraints and tools, whose schemas become
// grammars) and ParseEmbeddingsRequest (each input's field name rendered), a body's "reply" text
// through the tool-call parser of every format (whole and streamed in two pieces, which must
// agree), every error rendered as the API renders it. Any crash, any exception (an invalid UTF-8
// dump, a JSON type error), any hang or unbounded allocation is a bug. Input: byte 0 sets the piece
// size (1..256), the rest is the connection's bytes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/completion_request.h"
#include "server/embeddings_request.h"
#include "server/http_parser.h"
#include "server/json_body.h"
#include "server/routes.h"
#include "server/tool_calls.h"

namespace {

using forge::server::ApiError;

// Small limits, so that the fuzzer reaches them.
forge::server::HttpLimits Limits() {
  forge::server::HttpLimits l;
  l.max_line = 512;
  l.max_header = 4096;
  l.max_fields = 16;
  l.max_body = 1 << 16;
  return l;
}

void Sink(const ApiError& e) {
  volatile size_t n = e.Json().size();  // the dump must not throw on the client's bytes
  (void)n;
}

void Handle(const forge::server::HttpRequest& req) {
  const forge::server::RouteMatch route = forge::server::MatchRoute(req.method, req.path);
  if (route.error) return Sink(*route.error);
  (void)req.Header("authorization");
  nlohmann::json body;
  forge::server::JsonLimits jl;
  jl.max_values = 4096;
  if (auto e = forge::server::ParseJsonBody(req.body, jl, &body)) return Sink(*e);
  for (bool chat : {false, true}) {
    forge::server::CompletionRequest parsed;
    if (auto e = forge::server::ParseCompletionRequest(body, chat, &parsed, req.body)) Sink(*e);
  }
  forge::server::EmbeddingsRequest embed;
  if (auto e = forge::server::ParseEmbeddingsRequest(body, &embed)) {
    Sink(*e);
  } else if (embed.inputs.empty() || embed.inputs.size() > forge::server::kMaxEmbeddingInputs) {
    __builtin_trap();  // a parsed request has 1 to kMaxEmbeddingInputs inputs
  } else {
    (void)embed.InputField(embed.inputs.size() - 1);
  }
  if (body.is_object() && body.contains("tokens") && body["tokens"].is_array()) {
    for (const auto& t : body["tokens"]) (void)forge::server::TokenIdFromJson(t, 32000, "tokens");
  }
  if (body.is_object() && body.contains("reply") && body["reply"].is_string()) {
    using forge::server::ToolCallFormat;
    const std::string& reply = body["reply"].get_ref<const std::string&>();
    std::vector<forge::server::ToolSpec> tools(2);
    tools[0].name = "f";
    tools[1].name = "get_weather";
    for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama31,
                             ToolCallFormat::kMistral, ToolCallFormat::kGeneric}) {
      const forge::server::ParsedReply whole = forge::server::ParseToolCalls(f, reply, tools, 1);
      forge::server::ToolCallStream stream(f, tools, 1);
      const size_t cut = reply.size() / 2;
      auto a = stream.Feed(std::string_view(reply).substr(0, cut));
      auto b = stream.Feed(std::string_view(reply).substr(cut));
      auto c = stream.Finish();
      if (a.content + b.content + c.content != whole.content ||
          c.calls.size() != whole.calls.size()) {
        __builtin_trap();  // the stream must give what the whole reply gives
      }
    }
  }
}

void Feed(std::string_view input, size_t piece, forge::server::BodyBudget* budget) {
  forge::server::HttpParser parser(Limits(), budget);
  std::string pending;  // bytes read and not yet used, as the session keeps them
  for (size_t at = 0; at < input.size() || !pending.empty();) {
    const size_t n = std::min(piece, input.size() - at);
    pending.append(input.substr(at, n));
    at += n;
    bool stop = false;
    while (!pending.empty() && !stop) {
      size_t used = 0;
      switch (parser.Put(pending, &used)) {
        case forge::server::HttpParser::State::kNeedMore:
          stop = used == 0;
          break;
        case forge::server::HttpParser::State::kHeaderDone:
          break;
        case forge::server::HttpParser::State::kDone:
          Handle(parser.Take());
          break;
        case forge::server::HttpParser::State::kError:
          Sink(ApiError::Http(parser.error_status(), parser.error_message()));
          return;
      }
      pending.erase(0, used);
    }
    if (n == 0) break;  // all input given; what is left is an incomplete request
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0];
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  forge::server::BodyBudget budget(1 << 17);
  Feed(input, piece, &budget);
  if (budget.used() != 0) __builtin_trap();  // every reservation is given back
  return 0;
}
