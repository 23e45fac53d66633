// The embeddings endpoint: checks a parsed request against the model (it must embed; inputs
// within its vocabulary and length), submits every input as its own engine request at once (the
// engine batches them) and answers with their vectors in order, cancelling on disconnect or error.
#pragma once

#include <memory>
#include <string>

#include "server/http_session.h"
#include "server/server.h"

namespace forge::server {

// POST /v1/embeddings.
void HandleEmbeddings(ServerContext& ctx, const ServedModel& model,
                      std::shared_ptr<HttpSession> session, const std::string& body);

// The 400 a request that needs the other kind of model gets: an embedding request to a model that
// does not embed (embed = true), or a completion to one that does; names the model and why.
ApiError WrongModelKind(const ServedModel& model, bool embed, const std::string& endpoint);

}  // namespace forge::server
