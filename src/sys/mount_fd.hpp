// Mounts by descriptor (the kernel's mount API: fsopen/fsmount, open_tree, mount_setattr,
// move_mount). A mount is built detached, given its attributes while nothing can see it,
// and attached onto a target *descriptor*: no path is resolved between choosing the
// target and mounting on it, so a symlink swapped into a shared volume during setup
// (CVE-2021-30465) or an image's /dev pointing at the host (CVE-2025-31133) cannot
// redirect it. Callers resolve targets with sys::open_in_root; sources are mrun's own
// descriptors or the caller's host paths.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/unique_fd.hpp"

namespace mrun::sys {

// MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOATIME, MS_NODIRATIME, MS_STRICTATIME,
// MS_RELATIME → MOUNT_ATTR_*; other MS_* bits are not mount attributes and are ignored.
std::uint64_t mount_attrs_from_flags(unsigned long ms_flags);

// A fresh filesystem as a detached mount: fsopen(fstype), one fsconfig per
// comma-separated option of `data` ("key=value" a string, "key" a flag), "ro" on the
// superblock when `attrs` has MOUNT_ATTR_RDONLY, then fsmount with `attrs`. Errors carry
// the kernel's own message from the filesystem context when it wrote one.
UniqueFd new_filesystem(const std::string& fstype, const std::string& source,
                        const std::string& data, std::uint64_t attrs, const std::string& what);

// A detached copy (open_tree OPEN_TREE_CLONE) of the mount at `fd` (any descriptor, O_PATH
// included), or of the host path `path`; with `recursive`, the mounts below it too.
UniqueFd clone_mount(int fd, bool recursive, const std::string& what);
UniqueFd clone_mount(const std::string& path, bool recursive, const std::string& what);

// Enters the mount namespace `mntns_fd` names, keeping a copy of this process's root and
// every mount below it as its root, and ends in its /: setns alone would reset the root to
// that namespace's. The copy is detached, in no namespace, so the mounts go with the last
// process whose root it is. Returns the errno of setns (0 on success), so that the caller
// can name the namespace and the fix.
int enter_mount_namespace_keeping_root(int mntns_fd);

// A detached copy of the host path `path` (the mounts below it too with `recursive`),
// idmapped through the user namespace `userns_fd` (MOUNT_ATTR_IDMAP): a file owned by id
// N on disk shows as the id N maps to there. Needs CAP_SYS_ADMIN over the filesystem.
UniqueFd idmapped_tree(const std::string& path, int userns_fd, bool recursive,
                       const std::string& what);

// mount_setattr(AT_EMPTY_PATH) on the mount `fd` is (a detached one, or one attached):
// sets `attrs` (MOUNT_ATTR_*), on every mount below it with `recursive`. Only ever sets:
// a flag the kernel locked on a mount copied into a user namespace is never cleared.
void set_mount_attrs(int fd, std::uint64_t attrs, bool recursive, const std::string& what);

// mount_setattr with the atime mode and propagation too, for an OCI config's own mount
// options: `set` and `clear` (MOUNT_ATTR_*; an atime mode in `set` clears the old one),
// `propagation` MS_SHARED, MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE (0: unchanged).
void set_mount_attrs(int fd, std::uint64_t set, std::uint64_t clear, std::uint64_t propagation,
                     bool recursive, const std::string& what);

// move_mount: attaches the detached mount `mount_fd` onto the file or directory the
// descriptor `target_fd` refers to (not onto whatever its path names now).
void attach_mount(int mount_fd, int target_fd, const std::string& what);

// O_PATH descriptor of the host's /dev/null, checked to be the character device 1:3:
// the masks' source, never a node of the image.
UniqueFd open_host_dev_null();

}  // namespace mrun::sys
