#include "init/namespace_join.hpp"

#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>

#include "base/error.hpp"

namespace mrun::runtime {

NamespaceJoin::NamespaceJoin(const NamespaceRequests& requests, sys::Syscalls& calls)
    : calls_(&calls) {
  // The order runc joins in, the user namespace being none of mrun's choices here.
  const struct {
    const char* kind;
    const char* proc_name;
    int nstype;
    const NamespaceRequest* request;
  } kinds[] = {
      {"ipc", "ipc", CLONE_NEWIPC, &requests.ipc},
      {"uts", "uts", CLONE_NEWUTS, &requests.uts},
      {"network", "net", CLONE_NEWNET, &requests.network},
      {"pid", "pid_for_children", CLONE_NEWPID, &requests.pid},
      {"cgroup", "cgroup", CLONE_NEWCGROUP, &requests.cgroup},
  };
  for (const auto& k : kinds) {
    if (k.request->source != NamespaceSource::joined) continue;
    const std::string field = std::string("linux.namespaces (") + k.kind + ")";
    Join join{k.kind, k.nstype, k.request->path, {}, {}, false};
    join.target.reset(::open(join.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!join.target) {
      throw_errno("config.json: " + field + ": open " + join.path,
                  std::string("give the path of an existing namespace (/proc/PID/ns/") +
                      (k.nstype == CLONE_NEWPID ? "pid" : k.proc_name) + ", /run/netns/NAME)");
    }
    std::string own = std::string("/proc/self/ns/") + k.proc_name;
    join.own.reset(::open(own.c_str(), O_RDONLY | O_CLOEXEC));
    if (!join.own) throw_errno("open " + own);
    joins_.push_back(std::move(join));
  }
}

NamespaceJoin::~NamespaceJoin() {
  leave();
}

namespace {
Error join_error(const char* kind, const std::string& path, int err) {
  const std::string field = std::string("linux.namespaces (") + kind + ")";
  // EINVAL: the file is no namespace of that kind; EPERM: mrun holds no CAP_SYS_ADMIN in
  // the user namespace that owns it (rootless, a namespace of another user namespace than
  // the one mrun runs in).
  return Error("config.json: " + field + ": join " + path, err,
               err == EINVAL ? "the path is no " + std::string(kind) + " namespace"
                             : "mrun must run in (or above) the user namespace that owns it");
}
}  // namespace

void NamespaceJoin::enter() {
  for (auto& join : joins_) {
    int err = calls_->setns(join.target.get(), join.nstype);
    if (err != 0) {
      leave();
      throw join_error(join.kind, join.path, err);
    }
    join.entered = true;
  }
}

void NamespaceJoin::enter_for_good() const {
  for (const auto& join : joins_) {
    int err = calls_->setns(join.target.get(), join.nstype);
    if (err != 0) throw join_error(join.kind, join.path, err);
  }
}

int NamespaceJoin::pid_namespace_fd() const {
  for (const auto& join : joins_) {
    if (join.nstype == CLONE_NEWPID) return join.target.get();
  }
  return -1;
}

void NamespaceJoin::leave() noexcept {
  for (auto it = joins_.rbegin(); it != joins_.rend(); ++it) {
    if (!it->entered) continue;
    // Back into a namespace the monitor was in a moment ago: the kernel has no reason
    // to refuse, and if it did the monitor must not go on in the container's.
    if (calls_->setns(it->own.get(), it->nstype) != 0) ::abort();
    it->entered = false;
  }
}

}  // namespace mrun::runtime
