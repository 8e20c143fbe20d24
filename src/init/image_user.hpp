// What the image's own /etc/passwd says about a uid, read by the container's process
// itself after pivot_root (so inside the image, as the container's root): mrun's host
// side never reads a file of the rootfs, which could be a symlink to a host file, a
// FIFO or /dev/zero.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace mrun::runtime {

// The passwd file's largest accepted size: longer ones are refused, not read.
inline constexpr std::size_t max_passwd_size = 1 << 20;

// The primary gid of `uid` in passwd text ("name:x:uid:gid:..."), if listed.
std::optional<gid_t> primary_gid_in_passwd(const std::string& passwd, uid_t uid);

// /etc/passwd of the current root, if it is a regular file of at most max_passwd_size
// bytes (opened non-blocking: a FIFO cannot hang setup); nullopt otherwise.
std::optional<std::string> read_image_passwd();

// The home directory of `uid` in passwd text (the sixth field), if listed with one.
std::optional<std::string> home_in_passwd(const std::string& passwd, uid_t uid);

}  // namespace mrun::runtime
