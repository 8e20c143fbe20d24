// CVE-2019-5736: a process of mrun that joins a running container is visible there
// (/proc/PID in the container's pid namespace) until it execs the container's program.
// Through /proc/PID/exe, a magic link that ignores mount namespaces, the container can
// reach the host's mrun binary, hold it open and, once no mrun runs it any more (a
// running binary refuses writers with ETXTBSY), write it: the next mrun anyone runs on
// the host is the container's. Whoever may write the binary can do it: container root
// in a rootful container without a user namespace (host root), or rootless, the caller
// when the binary is theirs (a build tree, ~/.local/bin), as the container's root is.
// The same trick without any window: exec a script whose interpreter is
// `#!/proc/self/exe`; the kernel resolves it to the exec'ing process's binary: mrun's.
//
// The defence, as runc and crun: the verbs that join a running container first
// re-execute themselves from a copy of their binary in a memfd, sealed against writes
// and size changes (and against new seals). /proc/PID/exe then names that memfd; the
// host's binary is nowhere in reach, and the copy cannot be changed by anyone. Where
// no id of the container could write the binary (a user namespace of its own that maps
// neither its owner nor its group, as rootless with an installed root-owned mrun), the
// link reaches a file the container can only read, and the copy (an exec and a few
// megabytes, a quarter of `mrun exec`) is skipped: container_may_write_binary.
//
// Other mrun processes that enter a container's namespaces need no copy: the
// container's init, its hook processes (createContainer, startContainer) and
// fuse-overlayfs's setup all run while the container's pid namespace, a new one, holds
// nothing but mrun: no container code can see them yet. A container that joins a pid
// namespace by path (a pod's shareProcessNamespace) is the exception: the processes
// already there see its setup, so create and run of such a config re-execute from a
// sealed copy first, as exec does (cli/oci_bundle.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mrun::runtime {

// The seals a copy must carry: no writes, no shrinking or growing, no changing them.
int protective_seals();
// Whether `seals` (F_GET_SEALS, -1 for an unsealable file) includes them all.
bool is_sealed_copy(int seals);
// How much of an ELF file exec needs: the end of its last program-header segment (the
// kernel and ld.so read nothing else), given the file's first bytes `head` (ELF header
// and program headers) and its size. Section headers and what only they point to (debug
// info, symbol tables: 97% of a debugoptimized mrun) come after and need no copy.
// nullopt: not a native ELF64 file, or its headers are not in `head`: copy it all.
std::optional<std::size_t> loadable_size(std::string_view head, std::size_t file_size);
// /proc/self/cmdline's NUL-terminated words.
std::vector<std::string> split_cmdline(const std::string& text);

// Whether this process runs from a sealed copy (F_GET_SEALS of /proc/self/exe).
bool running_from_sealed_copy();

// The binary's owner, group and mode, and whether it carries a POSIX ACL.
struct BinaryAccess {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0;
  bool has_acl = false;
};
// Whether some id of a container whose user namespace has these maps (the text of
// /proc/PID/uid_map and gid_map, read from ours) could write the binary, as the attack
// needs: the world write bit; its owner mapped (who may chmod it; container root's
// CAP_DAC_OVERRIDE and CAP_FOWNER, too, cover only inodes whose owner is mapped); its
// group mapped with the group write bit; or an ACL, which may name anyone. Pure.
bool container_may_write_binary(const BinaryAccess& binary, const std::string& uid_map,
                                const std::string& gid_map);

// Before joining the running container of CONTAINER_PID: re-executes from a sealed copy
// (reexec_from_sealed_copy) unless no id of the container could write this binary,
// which needs a user namespace of the container's own: rootless with the installed,
// root-owned mrun the copy protects nothing. Rootful, or nested in an engine's user
// namespace, the container's root is ours and may write what we may: always copied.
void protect_binary_before_joining(pid_t container_pid);

// Before joining a running container: returns at once when this process already runs
// from a sealed copy; otherwise copies /proc/self/exe (its loadable part, section headers
// dropped from the ELF header) into a sealed memfd and execs it
// with the same argv and environment (plus a marker variable, so a copy that turned out
// unsealed fails instead of looping), i.e. does not return. Fails (125) where memfds
// cannot be executable (vm.memfd_noexec=2) rather than join unprotected.
void reexec_from_sealed_copy();

}  // namespace mrun::runtime
