#include "security/security_options.hpp"

#include <cerrno>

#include "base/error.hpp"

namespace mrun::security {

void apply_security_opt(SecurityOptions& options, const std::string& value) {
  const std::string forms =
      "use seccomp=PATH, seccomp=unconfined, no-new-privileges or no-new-privileges=true|false";
  auto eq = value.find('=');
  std::string key = value.substr(0, eq);
  std::string arg = eq == std::string::npos ? "" : value.substr(eq + 1);
  if (key == "seccomp") {
    if (arg.empty())
      throw Error("--security-opt " + value + ": seccomp needs a value", EINVAL, forms);
    if (arg == "unconfined") {
      options.seccomp = SeccompMode::unconfined;
      options.seccomp_profile.clear();
    } else {
      options.seccomp = SeccompMode::file;
      options.seccomp_profile = arg;
    }
    return;
  }
  if (key == "no-new-privileges") {
    if (eq == std::string::npos || arg == "true") {
      options.no_new_privileges = true;
    } else if (arg == "false") {
      options.no_new_privileges = false;
    } else {
      throw Error("--security-opt " + value + ": expected true or false", EINVAL, forms);
    }
    return;
  }
  throw Error("--security-opt " + value + ": unknown security option \"" + key + "\"", EINVAL,
              forms);
}

}  // namespace mrun::security
