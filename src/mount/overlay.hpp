// The container's root filesystem: an overlay of the image (lower, never written) and
// a per-container upper directory. Native overlayfs works inside a user namespace on
// kernels >= 5.11; fuse-overlayfs is the fallback where it does not.
#pragma once

#include <string>
#include <vector>

namespace mrun::mount {

struct OverlayLayers {
  std::string lower;   // the image (ROOTFS)
  std::string upper;   // writes land here
  std::string work;    // overlayfs scratch, same filesystem as upper
  std::string merged;  // mount point
};

// Mount data for overlayfs / fuse-overlayfs. `userxattr` makes overlayfs keep its
// metadata in user.* xattrs, which a user-namespace root may set on the upper fs.
// `volatile_upper` (overlayfs' `volatile`, kernel 5.10+) skips every sync of the upper
// filesystem, the two syncfs at unmount included, which stall a container's exit for
// milliseconds under I/O load. Only for an upper that is removed anyway (--rm): after
// a host crash overlayfs refuses to mount a volatile upper again, and mrun never does;
// its leftover sweep removes it.
// Throws mrun::Error when a path contains a character the option syntax cannot carry.
std::string overlay_mount_data(const OverlayLayers& layers, bool userxattr,
                               bool volatile_upper = false);
std::vector<std::string> fuse_overlayfs_argv(const std::string& program,
                                             const OverlayLayers& layers);

// Tries native overlayfs (volatile when asked and the kernel knows it); returns "" on
// success or the reason it failed (the caller falls back to fuse-overlayfs or reports
// it).
std::string try_native_overlay(const OverlayLayers& layers, bool in_user_namespace,
                               bool volatile_upper);

}  // namespace mrun::mount
