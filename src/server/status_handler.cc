// The status routes: snapshots from LiveStatus, as one JSON body or a stream of SSE events.
#include "server/status_handler.h"

#include "server/completion_handler.h"
#include "server/completion_json.h"

namespace forge::server {

void HandleStatus(ServerContext& ctx, const ServedModel& model, HttpSession& session) {
  ctx.status.MeasureFloorsOnce(model.facts);
  session.Respond(200, "application/json",
                  Dump(ctx.status.Snapshot(*model.engine, model.facts, /*with_history=*/true)),
                  {{"Cache-Control", "no-store"}});
}

void HandleStatusStream(ServerContext& ctx, const ServedModel& model,
                        const std::shared_ptr<HttpSession>& session) {
  const std::string first =
      SseData(ctx.status.Snapshot(*model.engine, model.facts, /*with_history=*/true));
  if (!ctx.status_streams.Add(session, first)) {
    return SendError(ctx, *session,
                     ApiError::Http(503, "too many status streams are open; retry later"), false);
  }
  // The floors come with a later event (this worker measures them once, about a second).
  ctx.status.MeasureFloorsOnce(model.facts);
}

void StatusTick(ServerContext& ctx, const ServedModel& model) {
  ctx.status.Tick(*model.engine);
  if (ctx.status_streams.size() == 0) return;
  ctx.status_streams.Send(
      SseData(ctx.status.Snapshot(*model.engine, model.facts, /*with_history=*/false)));
}

}  // namespace forge::server
