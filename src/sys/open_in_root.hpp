// Opening paths of an untrusted tree (an image's rootfs) without leaving it: openat2
// with RESOLVE_IN_ROOT or RESOLVE_BENEATH, so a symlink or ".." in the image can never
// send a mount, a chmod or a write to the host.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/unique_fd.hpp"

namespace mrun::sys {

// Opens a path strictly inside `root_fd` (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS):
// a symlink in an image can never send a mount to the host.
UniqueFd open_in_root(int root_fd, const std::string& path, int flags, mode_t mode = 0);

// The same without an exception: an invalid UniqueFd and `*err` set to the errno, for
// probes whose failure is an ordinary answer (a mount point still to be created).
UniqueFd try_open_in_root(int root_fd, const std::string& path, int flags, int* err);

// The entry `name` of the directory `dir_fd`, following no symlink at all (openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): what mrun has just made there, or ELOOP/ENOENT
// when someone swapped it meanwhile.
UniqueFd try_open_entry(int dir_fd, const std::string& name, int flags, int* err);

// "/proc/self/fd/N", the path form of an fd, for mount(2) targets.
std::string fd_path(int fd);

}  // namespace mrun::sys
