// Every difference between running as root and running rootless lives here, as data.
// The launcher asks these questions instead of testing getuid() in many places, so the
// two paths stay comparable (and `mrun gpu matrix` can print what differs).
#pragma once

#include <sys/types.h>

#include <string>

#include "runtime/config.hpp"

namespace mrun::runtime {

struct PrivilegeModel {
  bool rootful = false;
  // Root of a user namespace mrun did not make (rootless podman runs its runtime so):
  // the container stays in it, as crun does, and everything else is as rootless.
  bool nested = false;
  // Rootless needs a user namespace to own the other namespaces; rootful runs in the
  // host's user namespace by default, as runc/crun/podman do, so that mknod and the
  // device cgroup keep working.
  bool new_user_namespace = true;
  // Only root may write arbitrary id maps itself; others go through newuidmap/newgidmap
  // (subordinate ids) or the single-ID map an unprivileged process may write.
  bool may_write_any_id_map = false;
  // CAP_MKNOD counts only in the initial user namespace (vfs_mknod uses capable()).
  bool can_mknod = false;
  // Loading BPF_PROG_TYPE_CGROUP_DEVICE needs bpf_capable() in the initial namespace
  // (and attaching it CAP_NET_ADMIN there). Rootless mrun still tries once, so that
  // the kernel's own errno is what gets reported.
  bool can_attach_device_filter = false;
  // Rootless: what the user cannot do alone for --device/--gpu is asked of the
  // setuid mrun-gpu-helper(8) when it is installed: attaching the device filter to
  // the delegated leaf, and a usable node for a device the host keeps from the caller.
  bool uses_gpu_helper = false;
  // A node bound in keeps the host's owner and mode, judged against the caller's
  // kuid and groups (rootless); rootful makes its own node with mknod.
  bool node_access_is_callers = false;
  // The container's capabilities count in the host's user namespace (rootful without a
  // user namespace): --cap-add and --privileged then grant real host privilege, while
  // rootless they only reach what the container's own user namespace owns.
  bool host_capabilities = false;
  // Where the container's cgroup goes, relative to the cgroup2 root. Rootful: a
  // root-owned parent mrun creates ("/mrun": not a systemd-style ".slice" name, so
  // systemd never mistakes it for one of its units). Rootless: empty, meaning the
  // nearest subtree delegated to the caller above its own cgroup (systemd
  // Delegate=yes or a chown by root); an unprivileged user can make cgroups nowhere else.
  std::string default_cgroup_parent;
  // Where state and container storage live. Rootless: $XDG_RUNTIME_DIR/mrun, else
  // /run/user/UID/mrun where that directory is the caller's (a login without
  // XDG_RUNTIME_DIR exported), else /tmp/mrun-UID; the data under $XDG_DATA_HOME, else
  // $HOME/.local/share, else the passwd entry's home, else /tmp/mrun-home-UID.
  std::string default_state_root;
  std::string default_data_root;
  // The directory in a shared, sticky /tmp that the defaults above fell back to ("" when
  // none did): any local user could have made it first, so every verb makes it or checks
  // that it is the caller's and writable by no one else (runtime/context.cpp).
  std::string shared_tmp_state_dir;
  std::string shared_tmp_data_dir;
};

// `host_user_namespace`: whether mrun itself runs in the initial user namespace
// (userns::in_initial_user_namespace()); uid 0 anywhere else is not host root.
PrivilegeModel privilege_model_for(uid_t uid, const ContainerConfig* config = nullptr,
                                   bool host_user_namespace = true);

}  // namespace mrun::runtime
