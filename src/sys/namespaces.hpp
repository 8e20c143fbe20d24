// unshare(2), setns(2) and what a fresh namespace needs set up by its first process
// (its hostname, its loopback, a session keyring of its own).
#pragma once

#include <sys/types.h>

#include <string>

namespace mrun::sys {

// keyctl(KEYCTL_JOIN_SESSION_KEYRING, name): a fresh session keyring, so the container
// never shares the caller's keys. Returns the errno (0 on success): ENOSYS/EPERM/EACCES
// (no keyrings, or a seccomp filter of an outer container) are the caller's to judge.
int join_session_keyring(const std::string& name);

// Whether this process and `pid` are in the same namespace of `type` ("user", "mnt", ...):
// setns refuses to join one's own user namespace, so exec asks first.
bool same_namespace(pid_t pid, const std::string& type);

void set_hostname(const std::string& name);

void set_domainname(const std::string& name);

// unshare(2) of `flags`; throws naming `what` and `fix`.
void unshare_namespaces(int flags, const std::string& what, const std::string& fix = {});

// unshare(2) as a question: 0 or the errno.
int try_unshare(int flags) noexcept;

void bring_loopback_up();

void setns_pidfd(int pidfd, int nstypes, const std::string& what);

// setns(fd, nstype) on a namespace file; returns the errno (0 on success), so that the
// caller can name the namespace and the fix.
int setns_fd(int fd, int nstype) noexcept;

// The CLONE_NEW* kind of the namespace `fd` refers to (ioctl NS_GET_NSTYPE); 0 when it is
// no namespace.
int namespace_type(int fd);

}  // namespace mrun::sys
