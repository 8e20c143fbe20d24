#include "runtime/process_spec.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <map>

#include "base/error.hpp"

namespace mrun::runtime {

std::optional<int> rlimit_resource(const std::string& type) {
  static const std::map<std::string, int> names{
      {"RLIMIT_AS", RLIMIT_AS},
      {"RLIMIT_CORE", RLIMIT_CORE},
      {"RLIMIT_CPU", RLIMIT_CPU},
      {"RLIMIT_DATA", RLIMIT_DATA},
      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
      {"RLIMIT_LOCKS", RLIMIT_LOCKS},
      {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
      {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
      {"RLIMIT_NICE", RLIMIT_NICE},
      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
      {"RLIMIT_NPROC", RLIMIT_NPROC},
      {"RLIMIT_RSS", RLIMIT_RSS},
      {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
      {"RLIMIT_RTTIME", RLIMIT_RTTIME},
      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
      {"RLIMIT_STACK", RLIMIT_STACK},
  };
  auto it = names.find(type);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

void validate_process_limits(const ProcessSpec& process) {
  for (const auto& r : process.rlimits) {
    if (!rlimit_resource(r.type)) {
      throw Error("process.rlimits: unknown rlimit \"" + r.type + "\"", EINVAL,
                  "use a name from getrlimit(2), such as RLIMIT_NOFILE");
    }
    if (r.soft > r.hard) {
      throw Error("process.rlimits: " + r.type + ": soft limit " + std::to_string(r.soft) +
                      " is above the hard limit " + std::to_string(r.hard),
                  EINVAL, "the soft limit must not exceed the hard one");
    }
  }
  const auto& oom = process.oom_score_adj;
  if (oom && (*oom < -1000 || *oom > 1000)) {
    throw Error("process.oomScoreAdj " + std::to_string(*oom) + " is outside -1000..1000", EINVAL);
  }
}

}  // namespace mrun::runtime
