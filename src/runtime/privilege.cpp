#include "runtime/privilege.hpp"

#include <cstdlib>

#include "sys/fs.hpp"
#include "sys/user_db.hpp"

namespace mrun::runtime {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::string(value) : fallback;
}

// HOME unset (a service, `env -i`): the passwd entry's home, if it is the caller's.
std::string passwd_home(uid_t uid) {
  auto user = sys::user_by_uid(uid);
  if (!user || user->home.empty() || user->home[0] != '/') return {};
  const std::string& dir = user->home;
  return sys::is_private_dir(dir, uid) ? dir : std::string();
}
}  // namespace

PrivilegeModel privilege_model_for(uid_t uid, const ContainerConfig* config,
                                   bool host_user_namespace) {
  PrivilegeModel model;
  if (uid == 0 && host_user_namespace) {
    model.rootful = true;
    // A user namespace only where asked for: --userns single, or a config's user entry.
    model.new_user_namespace =
        config != nullptr && (config->run.userns == UsernsMode::single ||
                              config->namespaces.user.source != NamespaceSource::callers);
    model.may_write_any_id_map = true;
    model.can_mknod = !model.new_user_namespace;
    model.can_attach_device_filter = true;
    model.host_capabilities = !model.new_user_namespace;
    model.default_cgroup_parent = "/mrun";
    model.default_state_root = "/run/mrun";
    model.default_data_root = "/var/lib/mrun";
    return model;
  }
  model.rootful = false;
  // Root of someone else's user namespace already has its ids mapped (and may not map
  // new ones through newuidmap, which checks /etc/subuid against the real user):
  // the container shares that namespace; mknod and BPF stay refused.
  model.nested = uid == 0;
  // Nested, the container stays in the caller's user namespace unless its config asks
  // for one (rootless podman's configs have no user entry).
  model.new_user_namespace =
      !model.nested ||
      (config != nullptr && config->namespaces.user.source != NamespaceSource::callers);
  model.uses_gpu_helper = true;
  model.node_access_is_callers = true;
  // $XDG_RUNTIME_DIR is what podman uses; without it, /run/user/UID if the login made
  // one for the caller; without a login session at all (runuser, CI) a directory in the
  // shared /tmp, which every verb checks (shared_tmp_state_dir).
  const std::string id = std::to_string(uid);
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    model.default_state_root = std::string(xdg) + "/mrun";
  } else if (sys::is_private_dir("/run/user/" + id, uid)) {
    model.default_state_root = "/run/user/" + id + "/mrun";
  } else {
    model.shared_tmp_state_dir = "/tmp/mrun-" + id;
    model.default_state_root = model.shared_tmp_state_dir;
  }
  // The passwd database only without $HOME: reading it (NSS) costs every start a dozen
  // system calls and their code.
  const char* home_env = std::getenv("HOME");
  std::string home =
      home_env != nullptr && home_env[0] == '/' ? std::string(home_env) : passwd_home(uid);
  if (home.empty() && std::getenv("XDG_DATA_HOME") == nullptr) {
    model.shared_tmp_data_dir = "/tmp/mrun-home-" + id;
    home = model.shared_tmp_data_dir;
  }
  model.default_data_root = env_or("XDG_DATA_HOME", home + "/.local/share") + "/mrun";
  return model;
}

}  // namespace mrun::runtime
