#include "security/lsm.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/procfs.hpp"

namespace mrun::security {

bool apparmor_enabled() {
  auto text = sys::read_file("/sys/module/apparmor/parameters/enabled");
  return text && starts_with(trim(*text), "Y");
}

bool selinux_enabled() {
  return sys::exists("/sys/fs/selinux/enforce");
}

void check_lsm_labels(const std::string& apparmor_profile, const std::string& selinux_label) {
  if (!apparmor_profile.empty() && !apparmor_enabled()) {
    throw Error("config.json: process.apparmorProfile \"" + apparmor_profile +
                    "\": AppArmor is not enabled on this host",
                EINVAL, "remove process.apparmorProfile, or run where AppArmor is enabled");
  }
  if (!selinux_label.empty() && !selinux_enabled()) {
    throw Error("config.json: process.selinuxLabel \"" + selinux_label +
                    "\": SELinux is disabled or not supported on this host",
                EINVAL, "remove process.selinuxLabel, or run where SELinux is enabled");
  }
}

namespace {
void write_attr(const std::string& name, const std::string& value, const std::string& what) {
  UniqueFd fd = sys::open_own_proc_file(name, O_WRONLY);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    throw_errno(what, "check that the profile or label is loaded on this host");
  }
}
}  // namespace

void set_exec_labels(const std::string& apparmor_profile, const std::string& selinux_label) {
  if (!apparmor_profile.empty()) {
    const std::string what = "process.apparmorProfile: change to \"" + apparmor_profile + "\"";
    try {
      write_attr("attr/apparmor/exec", "exec " + apparmor_profile, what);
    } catch (const Error& e) {
      // Kernels before 5.8 have the shared attr/exec only.
      if (e.errno_value() != ENOENT) throw;
      write_attr("attr/exec", "exec " + apparmor_profile, what);
    }
  }
  if (!selinux_label.empty()) {
    write_attr("attr/exec", selinux_label, "process.selinuxLabel: set \"" + selinux_label + "\"");
  }
}

}  // namespace mrun::security
