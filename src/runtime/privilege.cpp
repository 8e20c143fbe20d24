#include "runtime/privilege.hpp"

#include <cstdlib>

namespace mrun::runtime {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::string(value) : fallback;
}
}  // namespace

PrivilegeModel privilege_model_for(uid_t uid, const ContainerConfig* config,
                                   bool host_user_namespace) {
  PrivilegeModel model;
  if (uid == 0 && host_user_namespace) {
    model.rootful = true;
    model.new_user_namespace = config != nullptr && config->userns == UsernsMode::single;
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
  model.new_user_namespace = !model.nested;
  model.uses_gpu_helper = true;
  model.node_access_is_callers = true;
  // $XDG_RUNTIME_DIR is what podman uses; without a login session (runuser, CI) fall
  // back to a private directory in /tmp, checked to be ours.
  model.default_state_root =
      std::getenv("XDG_RUNTIME_DIR") != nullptr && std::getenv("XDG_RUNTIME_DIR")[0] == '/'
          ? std::string(std::getenv("XDG_RUNTIME_DIR")) + "/mrun"
          : "/tmp/mrun-" + std::to_string(uid);
  std::string home = env_or("HOME", "/tmp/mrun-home-" + std::to_string(uid));
  model.default_data_root = env_or("XDG_DATA_HOME", home + "/.local/share") + "/mrun";
  return model;
}

}  // namespace mrun::runtime
