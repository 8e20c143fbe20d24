// The namespaces a config joins by path (init/namespace_join.hpp), through a test's
// Syscalls: the order of the joins, the return home in reverse when one is refused,
// the error that names the namespace and the fix, and that a join for good is never
// undone. The namespaces are this process's own (/proc/self/ns/*), which any process
// may open; the joins themselves are the test's, so no privilege is needed.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "init/namespace_join.hpp"
#include "sys/seam.hpp"

using namespace mrun;
using runtime::NamespaceJoin;

namespace {

// Records each setns as (fd, kind) and answers REFUSED's errno to the Nth (from 0);
// joins nothing for real, so the test stays in its own namespaces.
struct RecordedJoins : sys::Syscalls {
  std::vector<std::pair<int, int>> calls;
  std::size_t refused_at = static_cast<std::size_t>(-1);
  int refused = 0;
  int setns(int fd, int nstype) noexcept override {
    calls.emplace_back(fd, nstype);
    return calls.size() - 1 == refused_at ? refused : 0;
  }
};

// ipc, uts and network joined: each by the path of this process's own.
runtime::NamespaceRequests three_joins() {
  runtime::NamespaceRequests r;
  for (auto [request, name] : {std::pair{&r.ipc, "ipc"}, {&r.uts, "uts"}, {&r.network, "net"}}) {
    request->source = runtime::NamespaceSource::joined;
    request->path = std::string("/proc/self/ns/") + name;
  }
  return r;
}

std::vector<int> kinds_of(const std::vector<std::pair<int, int>>& calls) {
  std::vector<int> kinds;
  for (const auto& call : calls) kinds.push_back(call.second);
  return kinds;
}

}  // namespace

TEST_CASE("joins go in runc's order and come back in reverse when the joiner is done") {
  RecordedJoins kernel;
  {
    NamespaceJoin join(three_joins(), kernel);
    REQUIRE(kernel.calls.empty());  // opened, nothing entered yet
    join.enter();
    REQUIRE(kinds_of(kernel.calls) == std::vector<int>{CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET});
    REQUIRE(join.pid_namespace_fd() == -1);
  }
  // Home again on destruction: the monitor's own namespaces, last joined first.
  REQUIRE(kinds_of(kernel.calls) == std::vector<int>{CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET,
                                                     CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC});
  for (std::size_t i = 0; i < 3; ++i) {
    // What is left for is the monitor's own namespace, not the one joined.
    REQUIRE(kernel.calls[5 - i].first != kernel.calls[i].first);
  }
}

TEST_CASE("a refused join leaves the ones entered before it, in reverse, and names itself") {
  RecordedJoins kernel;
  kernel.refused_at = 2;  // the network namespace
  kernel.refused = EPERM;
  NamespaceJoin join(three_joins(), kernel);
  try {
    join.enter();
    FAIL("the refused join was not reported");
  } catch (const Error& e) {
    REQUIRE(e.errno_value() == EPERM);
    REQUIRE(e.exit_status() == 125);
    REQUIRE_THAT(e.what(), Catch::Contains("linux.namespaces (network)"));
    REQUIRE_THAT(e.what(), Catch::Contains("/proc/self/ns/net"));
    REQUIRE_THAT(e.what(), Catch::Contains("the user namespace that owns it"));
  }
  REQUIRE(kinds_of(kernel.calls) ==
          std::vector<int>{CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC});
  // Left already: the destructor has nothing more to undo.
  join.leave();
  REQUIRE(kernel.calls.size() == 5);
}

TEST_CASE("a path that is no namespace of that kind is named as such") {
  RecordedJoins kernel;
  kernel.refused_at = 0;
  kernel.refused = EINVAL;
  NamespaceJoin join(three_joins(), kernel);
  REQUIRE_THROWS_WITH(join.enter(), Catch::Contains("the path is no ipc namespace"));
  REQUIRE(kernel.calls.size() == 1);  // nothing was entered, nothing to leave
}

TEST_CASE("the container's own joins are for good: a refusal undoes none") {
  RecordedJoins kernel;
  kernel.refused_at = 1;
  kernel.refused = EPERM;
  {
    const NamespaceJoin join(three_joins(), kernel);
    REQUIRE_THROWS_WITH(join.enter_for_good(), Catch::Contains("linux.namespaces (uts)"));
  }
  REQUIRE(kinds_of(kernel.calls) == std::vector<int>{CLONE_NEWIPC, CLONE_NEWUTS});
}

TEST_CASE("a joined path that cannot be opened is refused before anything is entered") {
  RecordedJoins kernel;
  runtime::NamespaceRequests r = three_joins();
  r.uts.path = "/proc/self/ns/no-such-namespace";
  try {
    NamespaceJoin join(r, kernel);
    FAIL("the missing path was not reported");
  } catch (const Error& e) {
    REQUIRE(e.errno_value() == ENOENT);
    REQUIRE_THAT(e.what(), Catch::Contains("linux.namespaces (uts): open "
                                           "/proc/self/ns/no-such-namespace"));
    REQUIRE_THAT(e.what(), Catch::Contains("give the path of an existing namespace"));
  }
  REQUIRE(kernel.calls.empty());
}

TEST_CASE("a joined PID namespace's descriptor is there for the clone") {
  RecordedJoins kernel;
  runtime::NamespaceRequests r;
  r.pid.source = runtime::NamespaceSource::joined;
  r.pid.path = "/proc/self/ns/pid";
  NamespaceJoin join(r, kernel);
  REQUIRE(join.pid_namespace_fd() >= 0);
  REQUIRE(::fcntl(join.pid_namespace_fd(), F_GETFD) >= 0);
}
