#include "userns/caller.hpp"

#include <unistd.h>

#include <sstream>

#include "sys/fs.hpp"
#include "sys/user_db.hpp"
#include "userns/subid.hpp"

namespace mrun::userns {

std::string caller_name() {
  return sys::user_name_or_id(::getuid());
}

bool in_initial_user_namespace() {
  auto map = sys::read_file("/proc/self/uid_map");
  if (!map) return true;  // no /proc: nothing says otherwise
  std::istringstream in(*map);
  unsigned long long inside = 1, outside = 1, count = 0;
  in >> inside >> outside >> count;
  std::string more;
  return inside == 0 && outside == 0 && count == 4294967295ULL && !(in >> more);
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
