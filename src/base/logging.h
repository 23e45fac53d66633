// Leveled logging to stderr: LOG(INFO) << ...; the level is set by FORGE_LOG_LEVEL
// (debug|info|warning|error) or SetLogLevel(). FATAL aborts after printing.
#pragma once

#include <sstream>
#include <string_view>

namespace forge {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warning", "error"; returns false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel* out);

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage();  // prints; aborts for kFatal
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Swallows a stream expression in the disabled branch of LOG/CHECK.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

bool LogEnabled(LogLevel level);

}  // namespace internal
}  // namespace forge

#define FORGE_LOG_LEVEL_DEBUG ::forge::LogLevel::kDebug
#define FORGE_LOG_LEVEL_INFO ::forge::LogLevel::kInfo
#define FORGE_LOG_LEVEL_WARNING ::forge::LogLevel::kWarning
#define FORGE_LOG_LEVEL_ERROR ::forge::LogLevel::kError
#define FORGE_LOG_LEVEL_FATAL ::forge::LogLevel::kFatal

#define LOG(level)                                                         \
  !::forge::internal::LogEnabled(FORGE_LOG_LEVEL_##level)                  \
      ? (void)0                                                            \
      : ::forge::internal::LogVoidify() &                                  \
            ::forge::internal::LogMessage(FORGE_LOG_LEVEL_##level, __FILE__, __LINE__).stream()
