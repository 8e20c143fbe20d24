// The Linux security modules' labels of the runtime spec (process.apparmorProfile,
// process.selinuxLabel): checked where the config is read, put on right before execve.
// Where the module is not enabled a label means nothing, so it is refused, as runc
// refuses an SELinux label there (and fails writing an AppArmor profile).
#pragma once

#include <string>

namespace mrun::security {

// /sys/module/apparmor/parameters/enabled says Y; /sys/fs/selinux/enforce exists.
bool apparmor_enabled();
bool selinux_enabled();

// Throws mrun::Error (125) naming the field for a label whose module is not enabled.
void check_lsm_labels(const std::string& apparmor_profile, const std::string& selinux_label);

// In the process about to execve: the next exec enters these contexts (AppArmor's
// "exec PROFILE" to /proc/self/attr/apparmor/exec, or attr/exec on kernels before 5.8;
// SELinux's label to attr/exec), written through a checked descriptor of the process's
// own procfs entry. Empty: nothing.
void set_exec_labels(const std::string& apparmor_profile, const std::string& selinux_label);

}  // namespace mrun::security
