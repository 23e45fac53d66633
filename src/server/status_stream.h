// StatusStreams: the clients of GET /status/stream, each a server-sent-event stream the server
// pushes a status snapshot to every second. A client that leaves is dropped.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/http_session.h"

namespace forge::server {

class StatusStreams {
 public:
  // At most this many streams at once (a status page per operator, not per user).
  static constexpr size_t kMaxStreams = 64;

  // Starts the stream on `session` with its first event; false (nothing sent) when kMaxStreams
  // are open.
  bool Add(const std::shared_ptr<HttpSession>& session, const std::string& first_event);
  // One event (an SSE "data:" block) to every stream.
  void Send(const std::string& event);
  // Ends every stream (shutdown).
  void EndAll();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<HttpSession*, std::shared_ptr<HttpSession>> streams_;
};

}  // namespace forge::server
