#include "mount/overlay.hpp"

#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "sys/mounts.hpp"

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

std::string overlay_mount_data(const OverlayLayers& layers, bool userxattr, bool volatile_upper) {
  check_path(layers.lower, "lower");
  check_path(layers.upper, "upper");
  check_path(layers.work, "work");
  std::string data =
      "lowerdir=" + layers.lower + ",upperdir=" + layers.upper + ",workdir=" + layers.work;
  if (userxattr) data += ",userxattr";
  if (volatile_upper) data += ",volatile";
  return data;
}

std::vector<std::string> fuse_overlayfs_argv(const std::string& program,
                                             const OverlayLayers& layers) {
  // -f: stay in the foreground, so the process is ours to supervise and its
  // parent-death signal (set by mrun) survives; it must never outlive the container.
  return {program, "-f", "-o", overlay_mount_data(layers, false), layers.merged};
}

std::string try_native_overlay(const OverlayLayers& layers, bool in_user_namespace,
                               bool volatile_upper) {
  // The options to try, best first: an older kernel answers EINVAL to an option it
  // does not know (volatile before 5.10, userxattr before 5.11, where overlay in a user
  // namespace is refused anyway and the last try yields the real reason).
  struct Try {
    bool userxattr;
    bool volatile_upper;
  };
  std::vector<Try> tries;
  tries.push_back({in_user_namespace, volatile_upper});
  if (volatile_upper) tries.push_back({in_user_namespace, false});
  if (in_user_namespace) tries.push_back({false, false});
  int err = 0;
  for (const Try& t : tries) {
    std::string data = overlay_mount_data(layers, t.userxattr, t.volatile_upper);
    err = sys::try_mount("overlay", layers.merged.c_str(), "overlay", 0, data.c_str());
    if (err == 0) return "";
    if (err != EINVAL) break;
  }
  return std::string("mount overlay on ") + layers.merged + ": " + std::strerror(err);
}

}  // namespace mrun::mount
