// Diagnostics. Not global state: a Logger travels in the run context, so a library
// caller (and tests) decide what is printed and where.
//
// By default lines go to stderr as "mrun: ...". Engines (podman's conmon) run the OCI
// verbs with --log FILE --log-format json and read the error from FILE: then every line
// also goes to FILE, in runc's format (logrus text, or one JSON object per line), and
// errors still reach stderr too, as runc's do.
#pragma once

#include <ctime>
#include <string>

namespace mrun {

enum class LogLevel { debug, warning, error };
enum class LogFormat { text, json };

// One line of --log FILE, without a trailing newline. json:
//   {"level":"error","msg":"...","time":"2024-05-01T12:00:00.123456789Z"}
// text (logrus's): time="..." level=error msg="..."
std::string format_log_line(LogLevel level, const std::string& message, const timespec& when,
                            LogFormat format);

class Logger {
 public:
  explicit Logger(bool debug = false) : debug_(debug) {}
  void set_debug(bool on) noexcept { debug_ = on; }
  // --log: an fd opened O_APPEND by main (kept open for the life of the process; a
  // Logger copied into a child keeps writing there).
  void set_log_file(int fd, LogFormat format) noexcept {
    file_fd_ = fd;
    format_ = format;
  }
  int log_file() const noexcept { return file_fd_; }

  // "mrun: debug: ..." only under --debug.
  void debug(const std::string& message) const;
  // "mrun: warning: ..." always; one line.
  void warn(const std::string& message) const;
  // "mrun: ..." always; one line.
  void error(const std::string& message) const;

 private:
  void emit(LogLevel level, const std::string& prefix, const std::string& message) const;
  bool debug_;
  int file_fd_ = -1;
  LogFormat format_ = LogFormat::text;
};

}  // namespace mrun
