#include "userns/caller.hpp"

#include <pwd.h>
#include <unistd.h>

#include "userns/subid.hpp"

namespace mrun::userns {

std::string caller_name() {
  struct passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? pw->pw_name : std::to_string(::getuid());
}

IdMapPlan plan_caller_maps(const std::string& subuid_file, const std::string& subgid_file,
                           bool want_subordinate) {
  std::vector<SubIdRange> subuids, subgids;
  if (want_subordinate) {
    const std::string name = caller_name();
    subuids = read_subid_file(subuid_file, name, ::getuid());
    subgids = read_subid_file(subgid_file, name, ::getuid());
  }
  return plan_id_maps(::getuid(), ::getgid(), subuids, subgids, want_subordinate);
}

}  // namespace mrun::userns
