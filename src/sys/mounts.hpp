// mount(2), umount2(2), pivot_root(2) and chroot(2) by path: the classic mount calls,
// for the steps that name a mount point the runtime made itself (the new root, its
// /proc). Inside an image's rootfs mounts go by descriptor (sys/mount_fd.hpp).
// Every wrapper throws mrun::Error naming the mount, so callers read as steps.
#pragma once

#include <string>

namespace mrun::sys {

// mount(2). `what` names the mount in errors ("overlay", "proc", "bind /dev/null").
void mount(const std::string& source, const std::string& target, const std::string& fstype,
           unsigned long flags, const std::string& data, const std::string& what);

void bind_mount(const std::string& source, const std::string& target, bool recursive);

// mount(2) as a question: 0 or the errno, for callers that try several ways in turn.
int try_mount(const char* source, const char* target, const char* fstype, unsigned long flags,
              const char* data) noexcept;

void make_rprivate(const std::string& target);

void umount_detach(const std::string& target);

// pivot_root(".", ".") in `new_root`, then detach the old root: afterwards nothing of
// the host's mount tree is reachable from the process.
void pivot_into(const std::string& new_root);

// --no-pivot: MS_MOVE `new_root` onto / and chroot into it. Weaker than pivot_root: the
// old root stays mounted underneath and a process with CAP_SYS_CHROOT in the container
// can climb out of a chroot; only for filesystems pivot_root refuses (an initramfs).
void move_root_into(const std::string& new_root);

// fchdir(dir) and chroot("."): the root becomes the directory `dir` names, which may lie in
// another mount namespace (or in none: a detached tree). Ends in / of the new root.
void chroot_to(int dir, const std::string& what);

}  // namespace mrun::sys
