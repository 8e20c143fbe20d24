// Looking at the host for `mrun gpu doctor` and `mrun gpu matrix`: the fakegpu nodes,
// the helper and its policy, a user's groups, subordinate ids and delegated cgroup, and
// a running container seen through /proc/PID. Read-only; the decisions are in ladder.cpp
// and matrix_rows.cpp.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "gpucheck/ladder.hpp"
#include "gpupolicy/gpu_policy.h"  // MRUN_GPU_HELPER_POLICY
#include "sys/user_db.hpp"

namespace mrun::gpucheck {

// A host user (name, uid, gid, home, as sys/user_db.hpp reads them) and its groups.
struct UserInfo : sys::UserEntry {
  std::vector<gid_t> db_groups;  // from /etc/group (getgrouplist): what a login gets
};
// Throws mrun::Error naming the user when it does not exist.
UserInfo lookup_user(const std::string& name);
UserInfo lookup_uid(uid_t uid);

// The fakegpu character major in /proc/devices.
std::optional<unsigned> fakegpu_major();
// /dev/fakegpu* as stat(2) and access(2) (real ids) see them.
std::vector<NodeFact> fakegpu_nodes();

// The helper mrun would use: an absolute $MRUN_GPU_HELPER, else the installed one
// (PREFIX/libexec/mrun/mrun-gpu-helper); empty when there is none.
std::string helper_path();
// Its state, and whether its policy (loaded and judged by the helper's own code, so
// refused for the same reasons) allows `user` every node in `nodes`. `policy_file` is
// the helper's, fixed at build time; the unit tests name another.
HelperFact inspect_helper(const std::string& path, const UserInfo& user,
                          const std::vector<std::string>& nodes,
                          const std::string& policy_file = MRUN_GPU_HELPER_POLICY);

// Whether the calling process's cgroup (or an ancestor) is delegated to `uid`.
bool in_cgroup_delegated_to(uid_t uid);

// Everything the ladder looks at, for the calling user; `container` adds its rungs.
DoctorFacts gather_doctor_facts(const std::string& container, const std::string& state_root);

}  // namespace mrun::gpucheck
