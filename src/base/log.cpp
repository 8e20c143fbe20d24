#include "base/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

namespace mrun {

namespace {
// One write(2) per line so lines from the parent and the container's setup do not
// interleave mid-line on a shared stderr or log file (O_APPEND).
void write_line(int fd, const std::string& line) {
  std::string out = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(fd, out.data(), out.size());
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "error";
}

// RFC 3339 with nanoseconds, UTC: Go's time.RFC3339Nano as logrus writes it.
std::string rfc3339_nano(const timespec& when) {
  struct tm tm {};
  ::gmtime_r(&when.tv_sec, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%09ldZ", date, static_cast<long>(when.tv_nsec));
  return out;
}
}  // namespace

std::string format_log_line(LogLevel level, const std::string& message, const timespec& when,
                            LogFormat format) {
  if (format == LogFormat::json) {
    nlohmann::json j = {
        {"level", level_name(level)}, {"msg", message}, {"time", rfc3339_nano(when)}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // logrus quotes with Go's %q; a JSON string is the same for what we print.
  nlohmann::json quoted = message;
  return "time=\"" + rfc3339_nano(when) + "\" level=" + level_name(level) +
         " msg=" + quoted.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Logger::emit(LogLevel level, const std::string& prefix, const std::string& message) const {
  if (file_fd_ >= 0) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    write_line(file_fd_, format_log_line(level, message, now, format_));
    // As runc: with --log, only errors are repeated on stderr.
    if (level != LogLevel::error) return;
  }
  write_line(STDERR_FILENO, prefix + message);
}

void Logger::debug(const std::string& message) const {
  if (debug_) emit(LogLevel::debug, "mrun: debug: ", message);
}
void Logger::warn(const std::string& message) const {
  emit(LogLevel::warning, "mrun: warning: ", message);
}
void Logger::error(const std::string& message) const {
  emit(LogLevel::error, "mrun: ", message);
}

}  // namespace mrun
