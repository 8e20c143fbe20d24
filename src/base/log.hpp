// Diagnostics to stderr. Not global state: a Logger travels in the run context, so a
// library caller (and tests) decide what is printed.
#pragma once

#include <string>

namespace mrun {

class Logger {
 public:
  explicit Logger(bool debug = false) : debug_(debug) {}
  bool debug_enabled() const noexcept { return debug_; }
  void set_debug(bool on) noexcept { debug_ = on; }

  // "mrun: debug: ..." only under --debug.
  void debug(const std::string& message) const;
  // "mrun: warning: ..." always; one line.
  void warn(const std::string& message) const;
  // "mrun: ..." always; one line.
  void error(const std::string& message) const;

 private:
  bool debug_;
};

}  // namespace mrun
