// The completion endpoints: checks a parsed request against the model (name, context), submits
// it to the Engine and answers with one JSON body or an SSE stream, cancelling on disconnect.
#pragma once

#include <memory>
#include <string>

#include "server/api_error.h"
#include "server/http_session.h"
#include "server/server.h"

namespace forge::server {

// POST /v1/completions (chat = false) and /v1/chat/completions (chat = true).
void HandleCompletion(ServerContext& ctx, const ServedModel& model,
                      std::shared_ptr<HttpSession> session, const std::string& body, bool chat);

// POST /apply-template: a chat completion request's prompt as the chat template renders it (with
// its tools and template variables), without running it: {"prompt": text, "tokens": count}.
void HandleApplyTemplate(ServerContext& ctx, const ServedModel& model, HttpSession& session,
                         const std::string& body);

// Sends an error response (and counts a rejected request when `count`).
void SendError(ServerContext& ctx, HttpSession& session, const ApiError& error, bool count);

// The 404 for a request body's "model" that names neither the served model nor an alias.
ApiError UnknownModelError(const ServedModel& model, const std::string& requested);

}  // namespace forge::server
