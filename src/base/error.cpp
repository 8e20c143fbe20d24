#include "base/error.hpp"

#include <cerrno>
#include <cstring>

namespace mrun {

Error::Error(std::string what, int err, std::string hint, int exit_status)
    : std::runtime_error(render(what, err, hint)),
      what_(std::move(what)),
      errno_(err),
      hint_(std::move(hint)),
      exit_status_(exit_status) {}

std::string Error::render(const std::string& what, int err, const std::string& hint) {
  std::string text = what;
  if (err != 0) {
    text += ": ";
    text += std::strerror(err);
  }
  if (!hint.empty()) {
    text += " (";
    text += hint;
    text += ")";
  }
  return text;
}

Error Error::wrap(const std::string& context) const {
  return Error(context + ": " + what_, errno_, hint_, exit_status_);
}

Error Error::with_hint(std::string hint) const {
  return Error(what_, errno_, std::move(hint), exit_status_);
}

void throw_errno(const std::string& what, std::string hint) {
  throw Error(what, errno, std::move(hint));
}

void throw_errno(int err, const std::string& what, std::string hint) {
  throw Error(what, err, std::move(hint));
}

std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "E" + std::to_string(err);
}

}  // namespace mrun
