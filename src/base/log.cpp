#include "base/log.hpp"

#include <unistd.h>

namespace mrun {

namespace {
// One write(2) per line so lines from the parent and the container's setup do not
// interleave mid-line on a shared stderr.
void write_line(const std::string& prefix, const std::string& message) {
  std::string line = prefix + message + "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}
}  // namespace

void Logger::debug(const std::string& message) const {
  if (debug_) write_line("mrun: debug: ", message);
}
void Logger::warn(const std::string& message) const {
  write_line("mrun: warning: ", message);
}
void Logger::error(const std::string& message) const {
  write_line("mrun: ", message);
}

}  // namespace mrun
