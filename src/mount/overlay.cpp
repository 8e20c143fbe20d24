#include "mount/overlay.hpp"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace mrun::mount {

namespace {
void check_path(const std::string& path, const char* role) {
  // ',' separates mount options and ':' separates lower layers; overlayfs offers an
  // escape syntax but fuse-overlayfs does not, so refuse such paths up front.
  if (path.find_first_of(",:\n") != std::string::npos) {
    throw Error(
        std::string("overlay ") + role + " path \"" + path + "\" contains ',' ':' or a newline",
        EINVAL, "move the rootfs or the data directory to a plain path");
  }
}
}  // namespace

std::string overlay_mount_data(const OverlayLayers& layers, bool userxattr) {
  check_path(layers.lower, "lower");
  check_path(layers.upper, "upper");
  check_path(layers.work, "work");
  std::string data =
      "lowerdir=" + layers.lower + ",upperdir=" + layers.upper + ",workdir=" + layers.work;
  if (userxattr) data += ",userxattr";
  return data;
}

std::vector<std::string> fuse_overlayfs_argv(const std::string& program,
                                             const OverlayLayers& layers) {
  // -f: stay in the foreground, so the process is ours to supervise and its
  // parent-death signal (set by mrun) survives; it must never outlive the container.
  return {program, "-f", "-o", overlay_mount_data(layers, false), layers.merged};
}

std::string try_native_overlay(const OverlayLayers& layers, bool in_user_namespace) {
  std::string data = overlay_mount_data(layers, in_user_namespace);
  if (::mount("overlay", layers.merged.c_str(), "overlay", 0, data.c_str()) == 0) return "";
  int err = errno;
  if (in_user_namespace && err == EINVAL) {
    // Kernels before 5.11 do not know userxattr (and do not allow overlay in a user
    // namespace at all, so this retry mostly yields the real reason).
    data = overlay_mount_data(layers, false);
    if (::mount("overlay", layers.merged.c_str(), "overlay", 0, data.c_str()) == 0) return "";
    err = errno;
  }
  return std::string("mount overlay on ") + layers.merged + ": " + std::strerror(err);
}

}  // namespace mrun::mount
