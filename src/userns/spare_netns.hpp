// Spare network namespaces, made ahead by the shared user namespace's holder
// (shared_userns.hpp), so that a container's start does not wait for the kernel to make
// one: a new network namespace (its loopback device, sysctl tables, netfilter state) is
// the largest part of cloning a container into its namespaces (bench/README.md).
//
// The holder lives in a network namespace of its own ("home", made by it, owned by the
// shared user namespace) and keeps one spare, made by unshare(CLONE_NEWNET), opened,
// and left at once with setns back home: the holder is never in a namespace it hands
// out. It serves one request at a time on STATE_ROOT/.userns.sock: the spare goes to
// exactly one caller (SCM_RIGHTS) and the holder keeps no reference to it, then the
// next is made, while that container starts.
//
// Why a spare is as good as a fresh one: nothing ever ran in it; it has only its
// loopback device, down, and the defaults of a new namespace. Who may take one: the
// socket lies in the caller's private state root, and the holder serves only peers of
// its own uid (SO_PEERCRED, as seen from its user namespace); the caller checks that
// what it got is a network namespace owned by the shared user namespace. A container
// never sees the socket (not in its mount namespace) nor the holder (not in its PID
// namespace). Where no spare comes (an older holder, a limit on network namespaces),
// the container gets a new one from clone, as before.
#pragma once

#include <string>

#include "base/unique_fd.hpp"

namespace mrun::userns {

std::string spare_netns_socket_path(const std::string& state_root);

// The starter's part: a listening socket at the path (a stale one replaced), which the
// holder inherits. Invalid (and nothing left behind) where it cannot be made.
UniqueFd listen_for_spare_requests(const std::string& state_root);

// The holder's part. Never throws: the holder has nobody to tell.
class SpareNetworkNamespaces {
 public:
  // Enters a home network namespace and makes the first spare; without a home (the
  // kernel refused a namespace) every request is answered without one.
  SpareNetworkNamespaces();
  // Accepts one connection on LISTEN_FD, hands the spare to a peer of this uid, and
  // makes the next.
  void serve(int listen_fd);

 private:
  void make_spare();
  UniqueFd home_;
  UniqueFd spare_;
};

// The caller's part, in two steps so that the holder's answer (its wake-up, about 0.15
// ms here, more while the kernel tears down an exited container's network namespace)
// comes while the caller does other work: ask (the connected socket, invalid when no
// holder listens), then receive a spare network namespace, checked to be one owned by
// the user namespace USERNS_FD; invalid when none came.
UniqueFd ask_for_spare_network_namespace(const std::string& state_root);
UniqueFd receive_spare_network_namespace(const UniqueFd& request, int userns_fd);

}  // namespace mrun::userns
