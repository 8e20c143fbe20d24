// The spare network namespace protocol between the shared user namespace's holder and
// a starting mrun: what the caller accepts (a network namespace owned by the given user
// namespace, announced by 's'), what it refuses, and the holder's side answering over
// the state root's socket. The holder's part runs in a child, since it moves its own
// process into namespaces it makes.
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "base/spares.hpp"
#include "base/unique_fd.hpp"
#include "sys/fd_passing.hpp"
#include "sys/fs.hpp"
#include "temp_dir.hpp"
#include "userns/spare_netns.hpp"

using mrun::UniqueFd;
using namespace mrun::userns;

namespace {

UniqueFd open_ns(const char* kind) {
  UniqueFd fd(::open((std::string("/proc/self/ns/") + kind).c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  return fd;
}

// A connected pair standing in for the holder's socket: what the "holder" end sends,
// the caller end receives as receive_spare_network_namespace does.
struct FakeHolder {
  UniqueFd holder, caller;
  FakeHolder() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    holder = UniqueFd(fds[0]);
    caller = UniqueFd(fds[1]);
  }
  void answer(std::string_view bytes, int fd) {
    REQUIRE(mrun::sys::try_send_with_fd(holder.get(), bytes, fd) == 0);
  }
};

}  // namespace

TEST_CASE("the caller takes only a network namespace owned by the shared user namespace") {
  const UniqueFd own_net = open_ns("net");
  const UniqueFd own_user = open_ns("user");
  // This process's network namespace is owned by this process's user namespace.
  {
    FakeHolder h;
    h.answer("s", own_net.get());
    UniqueFd got = receive_spare_network_namespace(h.caller, own_user.get());
    REQUIRE(got);
    REQUIRE(mrun::sys::same_inode(got.get(), own_net.get()));
  }
  SECTION("owned by another user namespace than the one given") {
    UniqueFd not_the_owner(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    FakeHolder h;
    h.answer("s", own_net.get());
    REQUIRE_FALSE(receive_spare_network_namespace(h.caller, not_the_owner.get()));
  }
  SECTION("not a network namespace") {
    FakeHolder h;
    h.answer("s", own_user.get());  // a namespace, of the wrong kind
    REQUIRE_FALSE(receive_spare_network_namespace(h.caller, own_user.get()));
    FakeHolder h2;
    h2.answer("s", h2.holder.get());  // not a namespace at all
    REQUIRE_FALSE(receive_spare_network_namespace(h2.caller, own_user.get()));
  }
  SECTION("no spare: 'n', or 's' without a descriptor") {
    FakeHolder h;
    h.answer("n", -1);
    REQUIRE_FALSE(receive_spare_network_namespace(h.caller, own_user.get()));
    FakeHolder h2;
    h2.answer("s", -1);
    REQUIRE_FALSE(receive_spare_network_namespace(h2.caller, own_user.get()));
  }
  SECTION("any other answer, or a longer one, even with a good descriptor") {
    FakeHolder h;
    h.answer("x", own_net.get());
    REQUIRE_FALSE(receive_spare_network_namespace(h.caller, own_user.get()));
    FakeHolder h2;
    h2.answer("ss", own_net.get());
    REQUIRE_FALSE(receive_spare_network_namespace(h2.caller, own_user.get()));
  }
  SECTION("the holder went away without an answer") {
    FakeHolder h;
    h.holder.reset();
    REQUIRE_FALSE(receive_spare_network_namespace(h.caller, own_user.get()));
  }
  SECTION("no request at all") {
    REQUIRE_FALSE(receive_spare_network_namespace(UniqueFd(), own_user.get()));
  }
}

TEST_CASE("no holder listening: no request, and the start goes on without a spare") {
  mrun::test::TempDir root("spare-netns");
  REQUIRE_FALSE(ask_for_spare_network_namespace(root.path));
  if (!mrun::kKeepSpares) {  // a build without spares listens for nothing
    REQUIRE_FALSE(listen_for_spare_requests(root.path));
    return;
  }
  // A socket file nobody listens on (a dead holder's) is the same.
  UniqueFd listener = listen_for_spare_requests(root.path);
  REQUIRE(listener);
  listener.reset();
  REQUIRE_FALSE(ask_for_spare_network_namespace(root.path));
}

TEST_CASE("the holder hands each spare to one caller, then makes the next") {
  mrun::test::TempDir root("spare-netns");
  if (!mrun::kKeepSpares) return;  // no listener, no spares: the test above
  UniqueFd listener = listen_for_spare_requests(root.path);
  REQUIRE(listener);
  struct stat socket_file {};
  REQUIRE(::stat(spare_netns_socket_path(root.path).c_str(), &socket_file) == 0);
  REQUIRE(S_ISSOCK(socket_file.st_mode));

  pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    SpareNetworkNamespaces spares;  // unshare(CLONE_NEWNET): needs CAP_SYS_ADMIN
    spares.serve(listener.get());
    spares.serve(listener.get());
    ::_exit(0);
  }
  listener.reset();
  const UniqueFd own_net = open_ns("net");
  const UniqueFd own_user = open_ns("user");
  UniqueFd first =
      receive_spare_network_namespace(ask_for_spare_network_namespace(root.path), own_user.get());
  UniqueFd second =
      receive_spare_network_namespace(ask_for_spare_network_namespace(root.path), own_user.get());
  int status = 0;
  REQUIRE(::waitpid(holder, &status, 0) == holder);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  if (::geteuid() != 0) {
    // Unprivileged in the host's user namespace the holder makes no home and answers
    // without a spare.
    REQUIRE_FALSE(first);
    REQUIRE_FALSE(second);
    return;
  }
  REQUIRE(first);
  REQUIRE(second);
  // Fresh namespaces, never the caller's own, and never the same one twice.
  REQUIRE_FALSE(mrun::sys::same_inode(first.get(), own_net.get()));
  REQUIRE_FALSE(mrun::sys::same_inode(second.get(), own_net.get()));
  REQUIRE_FALSE(mrun::sys::same_inode(first.get(), second.get()));
  REQUIRE(::ioctl(first.get(), NS_GET_NSTYPE) == CLONE_NEWNET);
}
