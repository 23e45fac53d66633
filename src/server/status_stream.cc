// StatusStreams: a map of open streams; a stream leaves it when its client goes.
#include "server/status_stream.h"

#include <vector>

namespace forge::server {

bool StatusStreams::Add(const std::shared_ptr<HttpSession>& session,
                        const std::string& first_event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (streams_.size() >= kMaxStreams) return false;
    streams_[session.get()] = session;
  }
  session->StartStream();
  session->SendChunk(first_event);
  HttpSession* key = session.get();
  session->WatchDisconnect([this, key] {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(key);
  });
  return true;
}

void StatusStreams::Send(const std::string& event) {
  std::vector<std::shared_ptr<HttpSession>> to;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, s] : streams_) to.push_back(s);
  }
  for (const auto& s : to) s->SendChunk(event);
}

void StatusStreams::EndAll() {
  std::unordered_map<HttpSession*, std::shared_ptr<HttpSession>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams.swap(streams_);
  }
  for (const auto& [key, s] : streams) s->EndStream();
}

size_t StatusStreams::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace forge::server
