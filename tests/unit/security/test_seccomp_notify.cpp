// linux.seccomp as the runtime spec has it: every action and flag parsed, the refusals
// it and runc ask for, what the kernel lacks refused by name, and SCMP_ACT_NOTIFY for
// real: a forked child loads a notify filter and hands its listener over the setup
// channel, this process plays the monitor and then the agent (no privilege needed:
// no_new_privs is enough to load a filter, and a listener belongs to whoever holds it).
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"
#include "init/seccomp_agent.hpp"
#include "runtime/sync_channel.hpp"
#include "security/seccomp_cache.hpp"
#include "security/seccomp_compile.hpp"
#include "security/seccomp_profile.hpp"
#include "security/seccomp_support.hpp"
#include "security/security_plan.hpp"
#include "temp_dir.hpp"

using namespace mrun;
using namespace mrun::security;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    CHECK(e.exit_status() == exit_code::runtime_error);
    return e.what();
  }
  return "(no error)";
}

SeccompProfile parse(const std::string& text) {
  return parse_seccomp_profile(text, "p.json");
}

std::string parse_error(const std::string& text) {
  return error_of([&] { parse(text); });
}

// A profile that allows everything but hands `name` to an agent.
std::string notify_profile(const std::string& name, const std::string& extra = {}) {
  return R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/run/agent.sock",)" + extra +
         R"( "syscalls": [{"names": [")" + name + R"("], "action": "SCMP_ACT_NOTIFY"}]})";
}

struct TempDir : mrun::test::TempDir {
  TempDir() : mrun::test::TempDir("notify") {}
};

UniqueFd listen_at(const std::string& path) {
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(sock);
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(sock.get(), 4) == 0);
  return sock;
}

// What an agent reads from one connection: the JSON and the fd.
std::pair<std::string, UniqueFd> accept_listener(int listening) {
  UniqueFd conn(::accept4(listening, nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(conn);
  char data[8192];
  struct iovec iov {
    data, sizeof data
  };
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC);
  REQUIRE(n > 0);
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  REQUIRE(cmsg != nullptr);
  REQUIRE(cmsg->cmsg_type == SCM_RIGHTS);
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
  // The connection is closed after the one state (the runtime spec): end-of-file next.
  char more = 0;
  CHECK(::read(conn.get(), &more, 1) == 0);
  return {std::string(data, static_cast<std::size_t>(n)), UniqueFd(fd)};
}

}  // namespace

TEST_CASE("seccomp: every action of the runtime spec parses", "[seccomp]") {
  const std::pair<const char*, SeccompAction> expected[] = {
      {"SCMP_ACT_KILL", SeccompAction::kill_thread},
      {"SCMP_ACT_KILL_PROCESS", SeccompAction::kill_process},
      {"SCMP_ACT_KILL_THREAD", SeccompAction::kill_thread},
      {"SCMP_ACT_TRAP", SeccompAction::trap},
      {"SCMP_ACT_ERRNO", SeccompAction::errno_ret},
      {"SCMP_ACT_TRACE", SeccompAction::trace},
      {"SCMP_ACT_ALLOW", SeccompAction::allow},
      {"SCMP_ACT_LOG", SeccompAction::log},
      {"SCMP_ACT_NOTIFY", SeccompAction::notify},
  };
  REQUIRE(known_seccomp_actions().size() == std::size(expected));
  for (const auto& [name, action] : expected) {
    INFO(name);
    auto p = parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/a.sock",
        "syscalls": [{"names": ["getppid"], "action": ")" +
                   std::string(name) + R"("}]})");
    REQUIRE(p.syscalls.size() == 1);
    CHECK(p.syscalls[0].action == action);
    CHECK(seccomp_action_from_name(name) == action);
    CHECK(std::find(known_seccomp_actions().begin(), known_seccomp_actions().end(), name) !=
          known_seccomp_actions().end());
  }
  // errnoRet for the two that carry a number back.
  auto p = parse(R"({"defaultAction": "SCMP_ACT_TRACE", "defaultErrnoRet": 38, "syscalls": [
      {"names": ["getppid"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18},
      {"names": ["getpid"], "action": "SCMP_ACT_TRACE", "errnoRet": 7}]})");
  CHECK(p.default_errno == 38u);
  CHECK(p.syscalls[0].errno_ret == 18u);
  CHECK(p.syscalls[1].errno_ret == 7u);
  CHECK(to_string(SeccompAction::notify) == "SCMP_ACT_NOTIFY");
}

TEST_CASE("seccomp: every flag of the runtime spec parses, others are refused", "[seccomp]") {
  CHECK(known_seccomp_flags() ==
        std::vector<std::string>{"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                 "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
                                 "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"});
  auto p = parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_TSYNC",
      "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
      "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]})");
  CHECK(p.flags == known_seccomp_flags());
  CHECK(seccomp_flag_value("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") ==
        SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
  CHECK(seccomp_flag_value("SECCOMP_FILTER_FLAG_NEW_LISTENER") == 0);  // mrun's own business
  auto msg = parse_error(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_NEW_LISTENER"]})");
  CHECK_THAT(msg, Catch::Contains("seccomp profile p.json: flags[0]: unknown flag "
                                  "\"SECCOMP_FILTER_FLAG_NEW_LISTENER\""));
  CHECK_THAT(msg, Catch::Contains("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"));  // the hint
  CHECK(known_seccomp_operators().size() == 7);
}

TEST_CASE("seccomp: what the runtime spec and runc refuse, each by name", "[seccomp]") {
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names":
      ["getppid"], "action": "SCMP_ACT_NOTIFY"}]})"),
             Catch::Contains("syscalls[0].action: SCMP_ACT_NOTIFY, but listenerPath is not set"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_NOTIFY", "listenerPath": "/a.sock"})"),
             Catch::Contains("defaultAction: SCMP_ACT_NOTIFY cannot be the default action"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/a.sock",
      "syscalls": [{"names": ["read", "sendmsg"], "action": "SCMP_ACT_NOTIFY"}]})"),
             Catch::Contains("syscalls[0].names[1]: SCMP_ACT_NOTIFY cannot be used for sendmsg"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerMetadata": "x"})"),
             Catch::Contains("listenerMetadata: set without listenerPath"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "agent.sock"})"),
             Catch::Contains("listenerPath: \"agent.sock\" is not an absolute path"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/)" +
                         std::string(120, 'a') + R"("})"),
             Catch::Contains("longer than a unix socket address holds (107 bytes)"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": 7})"),
             Catch::Contains("listenerPath: expected a string"));
  // An errno only where the kernel carries one back.
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names":
      ["getppid"], "action": "SCMP_ACT_ALLOW", "errnoRet": 1}]})"),
             Catch::Contains("syscalls[0].errnoRet: an errno is only for SCMP_ACT_ERRNO and "
                             "SCMP_ACT_TRACE, not SCMP_ACT_ALLOW"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names":
      ["getppid"], "action": "SCMP_ACT_NOTIFY", "errno": "EPERM"}], "listenerPath": "/a"})"),
             Catch::Contains("syscalls[0].errno: an errno is only for"));
  CHECK_THAT(parse_error(R"({"defaultAction": "SCMP_ACT_KILL", "defaultErrnoRet": 1})"),
             Catch::Contains("defaultErrnoRet: an errno is only for SCMP_ACT_ERRNO and "
                             "SCMP_ACT_TRACE, not SCMP_ACT_KILL_THREAD"));
  // listenerPath without a notify rule is ignored (the runtime spec), not refused.
  auto p = parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/a.sock",
      "listenerMetadata": "m"})");
  CHECK(p.listener_path == "/a.sock");
  CHECK(p.listener_metadata == "m");
  CHECK_FALSE(compile_seccomp(p, SeccompTarget{}).has_listener());
}

TEST_CASE("seccomp: a notified execve is the agent's to allow", "[seccomp]") {
  CHECK(allows_execve(parse(R"({"defaultAction": "SCMP_ACT_ERRNO", "listenerPath": "/a",
      "syscalls": [{"names": ["execve"], "action": "SCMP_ACT_NOTIFY"}]})")));
}

TEST_CASE("seccomp: filter flags as seccomp(2) takes them", "[seccomp]") {
  auto flags_of = [](const std::string& text) {
    return compile_seccomp(parse(text), SeccompTarget{}).flags;
  };
  CHECK(flags_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_LOG",
      "SECCOMP_FILTER_FLAG_SPEC_ALLOW"]})") ==
        (SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW));
  // A notify rule brings the listener; TSYNC then needs TSYNC_ESRCH.
  auto filter = compile_seccomp(parse(notify_profile("getppid", R"( "listenerMetadata": "meta",
            "flags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"],)")),
                                SeccompTarget{});
  CHECK(filter.has_listener());
  CHECK(filter.flags ==
        (SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH |
         SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV));
  CHECK(filter.listener_path == "/run/agent.sock");
  CHECK(filter.listener_metadata == "meta");
  // The kernel refuses WAIT_KILLABLE_RECV without a listener; so does mrun, by name.
  CHECK_THAT(error_of([&] {
               flags_of(R"({"defaultAction": "SCMP_ACT_ALLOW",
                   "flags": ["SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]})");
             }),
             Catch::Contains("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV without a SCMP_ACT_NOTIFY "
                             "rule"));
  // A notify rule that does not apply here makes no listener.
  auto elsewhere = compile_seccomp(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath":
      "/a", "syscalls": [{"names": ["getppid"], "action": "SCMP_ACT_NOTIFY",
      "includes": {"arches": ["s390x"]}}]})"),
                                   SeccompTarget{});
  CHECK_FALSE(elsewhere.has_listener());
}

TEST_CASE("seccomp: a flag or an action the kernel lacks is refused by name", "[seccomp]") {
  SeccompTarget old_kernel;
  old_kernel.kernel_release = "4.9.0";
  old_kernel.kernel_flags = SECCOMP_FILTER_FLAG_TSYNC;
  old_kernel.kernel_actions =
      all_seccomp_actions & ~action_bit(SeccompAction::notify) & ~action_bit(SeccompAction::log);
  auto compile = [&](const std::string& text) {
    return error_of([&] { compile_seccomp(parse(text), old_kernel); });
  };
  CHECK_THAT(compile(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_TSYNC",
      "SECCOMP_FILTER_FLAG_SPEC_ALLOW"]})"),
             Catch::Contains("seccomp profile p.json: flags[1]: SECCOMP_FILTER_FLAG_SPEC_ALLOW is "
                             "not supported by this kernel (4.9.0)"));
  CHECK_THAT(compile(notify_profile("getppid")),
             Catch::Contains("syscalls[0].action: SCMP_ACT_NOTIFY is not supported by this "
                             "kernel (4.9.0)"));
  CHECK_THAT(compile(R"({"defaultAction": "SCMP_ACT_LOG"})"),
             Catch::Contains("defaultAction: SCMP_ACT_LOG is not supported"));
  CHECK(compile(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_TSYNC"]})") ==
        "(no error)");
  // A rule that does not apply here asks nothing of the kernel.
  CHECK(compile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getppid"],
      "action": "SCMP_ACT_LOG", "includes": {"minKernel": "9.0"}}]})") == "(no error)");
}

TEST_CASE("seccomp: this kernel and libseccomp, as `mrun features` lists them", "[seccomp]") {
  // Kernel 5.19 and later take every flag of the runtime spec; every action since 5.0.
  CHECK(supported_seccomp_flags() == known_seccomp_flags());
  CHECK(supported_seccomp_actions() == known_seccomp_actions());
  CHECK(kernel_accepts_seccomp_flags(SECCOMP_FILTER_FLAG_LOG));
  CHECK_FALSE(kernel_accepts_seccomp_flags(1u << 30));
  // Alone the kernel refuses it: the probe asks with a listener.
  CHECK_FALSE(kernel_accepts_seccomp_flags(SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV));
  auto archs = known_seccomp_archs();
  CHECK(std::find(archs.begin(), archs.end(), "SCMP_ARCH_X86_64") != archs.end());
  CHECK(std::find(archs.begin(), archs.end(), "SCMP_ARCH_AARCH64") != archs.end());
  for (const auto& arch : archs) CHECK(arch.rfind("SCMP_ARCH_", 0) == 0);
  // Whatever this libseccomp does not know stays off the list (2.5.4: LoongArch).
  CHECK(archs.size() <= 23);
}

TEST_CASE("seccomp: an architecture libseccomp does not know is refused, not dropped",
          "[seccomp]") {
  auto msg = error_of([] {
    compile_seccomp(parse(R"({"defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86", "SCMP_ARCH_VAX"]})"),
                    SeccompTarget{});
  });
  CHECK_THAT(msg, Catch::Contains("seccomp profile p.json: architectures[1]: architecture "
                                  "\"SCMP_ARCH_VAX\" is unknown to this libseccomp (" +
                                  libseccomp_version() + ")"));
  // Every name `mrun features` lists goes into a filter; one of the other byte order
  // does not, and says so.
  CHECK_THAT(error_of([] {
               compile_seccomp(parse(R"({"defaultAction": "SCMP_ACT_ALLOW",
                   "architectures": ["SCMP_ARCH_S390X"]})"),
                               SeccompTarget{});
             }),
             Catch::Contains("architectures[0]: libseccomp cannot add SCMP_ARCH_S390X to a filter "
                             "for x86_64"));
  for (const auto& arch : known_seccomp_archs()) {
    INFO(arch);
    CHECK_NOTHROW(compile_seccomp(
        parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [")" + arch + R"("]})"),
        SeccompTarget{}));
  }
}

TEST_CASE("seccomp: the container process state, as runc sends it", "[seccomp]") {
  auto j = nlohmann::json::parse(runtime::container_process_state_json(
      4422, "MKNOD=/dev/null",
      R"({"ociVersion":"1.0.2","id":"c1","status":"creating","pid":4422})"));
  CHECK(j["ociVersion"] == "1.0.2");
  CHECK(j["fds"] == nlohmann::json::array({"seccompFd"}));
  CHECK(j["pid"] == 4422);
  CHECK(j["metadata"] == "MKNOD=/dev/null");
  CHECK(j["state"]["id"] == "c1");
  CHECK(j["state"]["status"] == "creating");
  auto bare = nlohmann::json::parse(runtime::container_process_state_json(1, "", "{}"));
  CHECK_FALSE(bare.contains("metadata"));
}

TEST_CASE("seccomp cache: the listener's path and metadata come back with the program",
          "[seccomp]") {
  Logger quiet;
  TempDir tmp;
  const std::string dir = tmp.path + "/seccomp";
  const std::string text = notify_profile("getppid", R"( "listenerMetadata": "m",)");
  auto filter = compile_seccomp(parse(text), SeccompTarget{});
  const std::string key = seccomp_cache_key(text, SeccompTarget{});
  store_cached_seccomp(dir, key, filter, quiet);
  auto cached = load_cached_seccomp(dir, key, quiet);
  REQUIRE(cached);
  CHECK(cached->has_listener());
  CHECK(cached->listener_path == "/run/agent.sock");
  CHECK(cached->listener_metadata == "m");
  // A kernel that takes other flags is another key.
  SeccompTarget other;
  other.kernel_flags = 0;
  CHECK(seccomp_cache_key(text, other) != key);
}

TEST_CASE("seccomp notify, for real: listener over the setup channel, agent answers", "[seccomp]") {
  TempDir tmp;
  const std::string agent_path = tmp.path + "/agent.sock";
  auto filter = compile_seccomp(
      parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": ")" + agent_path +
            R"(", "listenerMetadata": "meta", "flags": ["SECCOMP_FILTER_FLAG_TSYNC",
            "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
            "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"], "syscalls": [{"names": ["getppid"],
            "action": "SCMP_ACT_NOTIFY"}, {"names": ["getpgid"], "action": "SCMP_ACT_NOTIFY"}]})"),
      SeccompTarget{});
  REQUIRE(filter.has_listener());
  SecurityPlan plan;
  plan.seccomp = filter;
  UniqueFd agent = listen_at(agent_path);
  auto [monitor_end, container_end] = runtime::make_sync_pair();

  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    monitor_end.close();
    int status = 250;
    try {
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) ::_exit(251);
      load_seccomp_last(plan, [&](UniqueFd listener) {
        runtime::hand_over_seccomp_listener(container_end, std::move(listener));
      });
      // The agent answers 42 for getppid and EXDEV for getpgid.
      long value = ::syscall(SYS_getppid);
      long denied = ::syscall(SYS_getpgid, 0);
      status = value == 42 && denied == -1 && errno == EXDEV ? 0 : 1;
    } catch (...) {
      status = 252;
    }
    ::_exit(status);
  }
  container_end.close();
  auto message = monitor_end.expect(runtime::ToMonitor::seccomp_listener);
  CHECK(message.sender == child);  // as the kernel saw it (SO_PASSCRED)
  REQUIRE(message.fd);
  runtime::pass_listener_to_agent(monitor_end, message, filter,
                                  R"({"ociVersion":"1.0.2","id":"c1","status":"creating"})");
  message.fd.reset();

  auto [text, listener] = accept_listener(agent.get());
  auto j = nlohmann::json::parse(text);
  CHECK(j["pid"] == child);
  CHECK(j["metadata"] == "meta");
  CHECK(j["fds"] == nlohmann::json::array({"seccompFd"}));
  CHECK(j["state"]["id"] == "c1");

  for (int answered = 0; answered < 2; ++answered) {
    struct pollfd p {
      listener.get(), POLLIN, 0
    };
    REQUIRE(::poll(&p, 1, 10000) == 1);
    struct seccomp_notif req {};
    REQUIRE(::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) == 0);
    CHECK(static_cast<pid_t>(req.pid) == child);
    struct seccomp_notif_resp resp {};
    resp.id = req.id;
    if (req.data.nr == SYS_getppid) {
      resp.val = 42;
    } else {
      CHECK(req.data.nr == SYS_getpgid);
      resp.error = -EXDEV;
    }
    REQUIRE(::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("seccomp notify: an agent nobody runs is an error naming listenerPath", "[seccomp]") {
  TempDir tmp;
  const std::string agent_path = tmp.path + "/nobody.sock";
  auto filter = compile_seccomp(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": ")" +
                                      agent_path + R"(", "syscalls": [{"names": ["getppid"],
                                      "action": "SCMP_ACT_NOTIFY"}]})"),
                                SeccompTarget{});
  auto [monitor_end, container_end] = runtime::make_sync_pair();
  runtime::SyncMessage<runtime::ToMonitor> message;
  message.type = runtime::ToMonitor::seccomp_listener;
  message.fd = UniqueFd(::dup(0));
  auto msg = error_of([&] { runtime::pass_listener_to_agent(monitor_end, message, filter, "{}"); });
  CHECK_THAT(msg, Catch::StartsWith("seccomp listenerPath " + agent_path + ": connect to " +
                                    agent_path + ": No such file or directory"));
  CHECK_THAT(msg, Catch::Contains("start the seccomp agent"));
  // Nothing was sent on: the process is not told to go on.
  struct pollfd p {
    container_end.fd(), POLLIN, 0
  };
  CHECK(::poll(&p, 1, 0) == 0);
}

TEST_CASE("seccomp notify: without a listener (--init's PID 1) the kernel answers ENOSYS",
          "[seccomp]") {
  auto filter = compile_seccomp(parse(notify_profile("getppid")), SeccompTarget{});
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) ::_exit(254);
    try {
      load_seccomp_program_without_listener(filter);
    } catch (...) {
      ::_exit(253);
    }
    long rc = ::syscall(SYS_getppid);
    ::_exit(rc < 0 ? (errno > 250 ? 250 : errno) : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == ENOSYS);
}

TEST_CASE("seccomp: a listener with nowhere to go is an error, not a hang", "[seccomp]") {
  SecurityPlan plan;
  plan.seccomp = compile_seccomp(parse(notify_profile("getppid")), SeccompTarget{});
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) ::_exit(254);
    try {
      load_seccomp_last(plan);
    } catch (const Error& e) {
      ::_exit(std::string(e.what()).find("nowhere to go") != std::string::npos ? 0 : 1);
    }
    ::_exit(2);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// mrun answers "can the notify action be used" from its own probes, so that a cached
// start never runs libseccomp's; the answer must be libseccomp's own (API level 5).
TEST_CASE("the notify action is available exactly when libseccomp's API level says so") {
  const bool ours = (mrun::security::available_seccomp_actions() &
                     mrun::security::action_bit(mrun::security::SeccompAction::notify)) != 0;
  const bool kernel_has_it = [] {
    std::uint32_t value = SECCOMP_RET_USER_NOTIF;
    return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &value) == 0;
  }();
  REQUIRE(ours == (kernel_has_it && seccomp_api_get() >= 5));
}
