// The live operations routes: GET /status (one snapshot) and GET /status/stream (a snapshot
// every second as server-sent events), and the once-a-second tick that feeds both.
#pragma once

#include <memory>

#include "server/http_session.h"
#include "server/server.h"

namespace forge::server {

// GET /status: the snapshot as JSON, with the recorded plot points. Starts the floors'
// measurement the first time (on the calling thread: a worker).
void HandleStatus(ServerContext& ctx, const ServedModel& model, HttpSession& session);
// GET /status/stream: an SSE stream whose first event holds the plot points; StatusTick sends
// the next ones. 503 past StatusStreams::kMaxStreams.
void HandleStatusStream(ServerContext& ctx, const ServedModel& model,
                        const std::shared_ptr<HttpSession>& session);
// Once a second (on a worker): records a point and sends a snapshot to every stream.
void StatusTick(ServerContext& ctx, const ServedModel& model);

}  // namespace forge::server
