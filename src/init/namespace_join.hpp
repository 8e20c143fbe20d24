// Namespaces an OCI config joins by path (linux.namespaces[].path): an engine's pod or
// network namespace. Two ways, by who may join:
//  - mrun runs in the host's user namespace (rootful, or rootless making one): the monitor
//    enters them right before clone and returns to its own right after, so the container
//    is born inside them and its new namespaces are made there, the joined ones keeping
//    their owner (runc joins before it unshares, for the same reason). The monitor can
//    return: only root in the owning user namespace could enter in the first place.
//  - nested (rootless podman runs mrun as root of a user namespace of its own, and the
//    container stays in it; mrun's home namespaces are the host's, where it could not
//    return): the
//    container's process joins them itself, first thing after clone, from descriptors
//    the monitor opened. A PID namespace cannot be joined this way (setns moves only the
//    children): a short-lived first child of the monitor enters it and clones the
//    container there (the launcher's clone_in_namespace), as for a joined user namespace.
#pragma once

#include <vector>

#include "base/unique_fd.hpp"
#include "runtime/config.hpp"
#include "sys/seam.hpp"

namespace mrun::runtime {

class NamespaceJoin {
 public:
  // Opens every joined path and the monitor's own namespace of that kind; throws a
  // 125 naming linux.namespaces (KIND) and the path when one cannot be opened or is not
  // a namespace of that kind. Nothing is entered yet. Joins and returns through CALLS
  // (a unit test's, to refuse one).
  explicit NamespaceJoin(const NamespaceRequests& requests,
                         sys::Syscalls& calls = sys::real_syscalls());
  NamespaceJoin(const NamespaceJoin&) = delete;
  NamespaceJoin& operator=(const NamespaceJoin&) = delete;
  ~NamespaceJoin();

  bool empty() const { return joins_.empty(); }
  // setns into each, in a fixed order; throws naming the one refused (then back home).
  void enter();
  // The container's process, after clone: setns into each, for good. Throws likewise.
  void enter_for_good() const;
  // The joined PID namespace's descriptor, -1 when none (it must be entered before
  // clone: setns moves only the children).
  int pid_namespace_fd() const;
  // Back into the monitor's own namespaces (also done by the destructor).
  void leave() noexcept;

 private:
  struct Join {
    const char* kind;  // the OCI name: "network", "ipc", ...
    int nstype;        // CLONE_NEW*
    std::string path;
    UniqueFd target;
    UniqueFd own;
    bool entered = false;
  };
  sys::Syscalls* calls_;
  std::vector<Join> joins_;
};

}  // namespace mrun::runtime
