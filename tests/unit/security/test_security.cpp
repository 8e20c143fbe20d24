// Isolation policy: profile parsing (every error names its key), capability planning,
// and the compiled filter loaded for real into a forked child (no privilege needed:
// no_new_privs is enough to load a filter).
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"
#include "security/capabilities.hpp"
#include "security/seccomp_cache.hpp"
#include "security/seccomp_compile.hpp"
#include "security/seccomp_profile.hpp"
#include "security/security_options.hpp"
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

// Loads `filter` in a forked child and returns the errno of `call` there (0: it worked).
int errno_under(const CompiledSeccomp& filter, long (*call)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) ::_exit(254);
    try {
      load_seccomp_program(filter);
    } catch (...) {
      ::_exit(253);
    }
    long rc = call();
    ::_exit(rc < 0 ? (errno > 250 ? 250 : errno) : 0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) < 253);
  return WEXITSTATUS(status);
}

long call_keyctl() {
  return ::syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
}
long call_getpid() {
  return ::syscall(SYS_getpid);
}
long call_x32_getpid() {
  return ::syscall(0x40000000L | SYS_getpid);  // the x32 ABI's getpid
}
long call_unshare_userns() {
  return ::syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */);
}
long call_bpf() {
  return ::syscall(SYS_bpf, 0, nullptr, 0);
}

CapMask default_caps() {
  return parse_caps_conf(default_policy().caps_conf, "caps.conf");
}

}  // namespace

TEST_CASE("profile: bad JSON names the line", "[security]") {
  auto msg = error_of([] {
    parse_seccomp_profile("{\"defaultAction\": \"SCMP_ACT_ALLOW\",\n\"syscalls\": [\n  {,}\n]}",
                          "p.json");
  });
  CHECK_THAT(msg, Catch::Contains("seccomp profile p.json: line 3"));
  CHECK_THAT(msg, Catch::Contains("invalid JSON"));
  // A number no double holds is nlohmann's out_of_range, not a parse_error
  // (tests/fuzz/regressions/seccomp): an Error all the same.
  CHECK_THAT(error_of([] { parse_seccomp_profile(R"({"defaultErrnoRet": 1e999})", "p.json"); }),
             Catch::Contains("seccomp profile p.json: invalid JSON"));
}

TEST_CASE("profile: a bad value names its key path", "[security]") {
  auto parse = [](const std::string& text) {
    return error_of([&] { parse_seccomp_profile(text, "p.json"); });
  };
  CHECK_THAT(parse(R"({"syscalls": []})"), Catch::Contains("defaultAction: missing"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_NOPE"})"),
             Catch::Contains("defaultAction: unknown action \"SCMP_ACT_NOPE\""));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"],
      "action": "SCMP_ACT_ERRNO", "args": [{"index": 6, "op": "SCMP_CMP_EQ"}]}]})"),
             Catch::Contains("syscalls[0].args[0].index"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{}, {"names": "read",
      "action": "SCMP_ACT_ALLOW"}]})"),
             Catch::Contains("syscalls[0]: no syscall names"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": "read",
      "action": "SCMP_ACT_ALLOW"}]})"),
             Catch::Contains("syscalls[0].names: expected an array of strings"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"],
      "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "op": "SCMP_CMP_EQ", "value": -1}]}]})"),
             Catch::Contains("syscalls[0].args[0].value: expected a non-negative integer"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrno": "EWHAT"})"),
             Catch::Contains("unknown errno name \"EWHAT\""));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"],
      "action": "SCMP_ACT_NOTIFY"}]})"),
             Catch::Contains("listenerPath is not set"));
  CHECK_THAT(parse(R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_X"]})"),
             Catch::Contains("flags[0]: unknown flag"));
}

TEST_CASE("profile: podman's fields are read", "[security]") {
  auto p = parse_seccomp_profile(R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "defaultErrno": "ENOSYS",
    "archMap": [{"architecture": "SCMP_ARCH_X86_64",
                 "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}],
    "syscalls": [
      {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"names": ["bpf"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
       "excludes": {"caps": ["CAP_SYS_ADMIN"], "minKernel": "4.8"}, "future_key": true}]})",
                                 "p.json");
  CHECK(p.default_action == SeccompAction::errno_ret);
  CHECK(p.default_errno == 38u);
  REQUIRE(p.arch_map.size() == 1);
  CHECK(p.arch_map[0].sub_architectures.size() == 2);
  REQUIRE(p.syscalls.size() == 2);
  CHECK(p.syscalls[0].includes.caps == std::vector<std::string>{"CAP_SYS_ADMIN"});
  CHECK(p.syscalls[1].errno_ret == 1u);
  CHECK(p.syscalls[1].excludes.min_kernel == "4.8");
  CHECK(p.syscalls[1].where == "syscalls[1]");
}

TEST_CASE("kernel versions compare numerically", "[security]") {
  CHECK(kernel_at_least("6.18.44-fc-v657", "4.8"));
  CHECK(kernel_at_least("4.8.0", "4.8"));
  CHECK_FALSE(kernel_at_least("4.7.10", "4.8"));
  CHECK_FALSE(kernel_at_least("5.4", "5.10"));
}

TEST_CASE("capabilities: names", "[security]") {
  CHECK(capability_from_name("CHOWN") == 0);
  CHECK(capability_from_name("cap_net_admin") == 12);
  CHECK(capability_from_name("CAP_SYS_ADMIN") == 21);
  CHECK_FALSE(capability_from_name("CAP_FLY"));
  CHECK_FALSE(capability_from_name("12"));
  CHECK(capability_name(5) == "CAP_KILL");
  // A number is no name, with or without the prefix.
  CHECK_FALSE(capability_from_name("CAP_12"));
  // Every capability of the kernel headers, there and back; one beyond them is a number.
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    INFO(cap);
    CHECK(capability_from_name(capability_name(cap)) == cap);
  }
  CHECK(capability_name(CAP_CHECKPOINT_RESTORE) == "CAP_CHECKPOINT_RESTORE");
  CHECK(capability_name(CAP_LAST_CAP + 1) == "CAP_" + std::to_string(CAP_LAST_CAP + 1));
  CHECK(kernel_last_capability() >= CAP_BPF);
  auto msg = error_of([] { parse_caps_conf("# x\nCAP_KILL\n\n  CAP_FLY # no\n", "caps.conf"); });
  CHECK_THAT(msg, Catch::Contains("caps.conf:4: unknown capability \"CAP_FLY\""));
}

// One capability set of this process as /proc/self/status shows it ("CapEff" ...).
CapMask status_caps(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0)
      return std::stoull(line.substr(field.size() + 1), nullptr, 16);
  }
  throw std::runtime_error("no " + field + " in /proc/self/status");
}

// Runs `body` in a forked child; its exit status (0: every check there held).
int in_child(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = body();
    } catch (...) {
      rc = 98;
    }
    ::_exit(rc);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

TEST_CASE("capabilities: the process's sets, read and set with capget/capset", "[security]") {
  const CapMask held = permitted_capabilities();
  CHECK(held == status_caps("CapPrm"));
  // Root gives itself CAP_KILL and CAP_CHOWN in every set, ambient included, then the
  // ambient CAP_KILL alone (cleared in between), then CAP_KILL alone everywhere. Anyone
  // else holds nothing, and sets exactly that.
  const CapMask both = held & (cap_bit(CAP_KILL) | cap_bit(CAP_CHOWN));
  const CapMask kill = held & cap_bit(CAP_KILL);
  CHECK(in_child([&] {
          CapabilityPlan plan;
          plan.effective = plan.permitted = plan.inheritable = plan.ambient = both;
          set_process_capabilities(plan);
          if (status_caps("CapAmb") != both || status_caps("CapInh") != both) return 1;
          // Permitted and inheritable unchanged, so only the clear takes CAP_CHOWN out.
          plan.ambient = kill;
          set_process_capabilities(plan);
          if (status_caps("CapAmb") != kill) return 2;
          plan.effective = plan.permitted = plan.inheritable = kill;
          set_process_capabilities(plan);
          if (status_caps("CapEff") != kill || status_caps("CapPrm") != kill) return 3;
          if (status_caps("CapInh") != kill) return 3;
          if (permitted_capabilities() != kill) return 4;
          return 0;
        }) == 0);
  // More than it holds: capset's EPERM, with the fix in the message.
  if (held != all_capabilities(kernel_last_capability())) {
    CHECK(in_child([&] {
            CapabilityPlan plan;
            plan.effective = plan.permitted = ~held & all_capabilities(kernel_last_capability());
            try {
              set_process_capabilities(plan);
            } catch (const Error& e) {
              return std::string(e.what()).find("CapPrm") != std::string::npos ? 0 : 2;
            }
            return 1;
          }) == 0);
  }
}

TEST_CASE("capabilities: the bounding set, dropped by PR_CAPBSET_DROP", "[security]") {
  const int last = kernel_last_capability();
  CapabilityPlan plan;
  plan.bounding = cap_bit(CAP_KILL);
  if (permitted_capabilities() & cap_bit(CAP_SETPCAP)) {
    CHECK(in_child([&] {
            drop_bounding_set(plan, last);
            return status_caps("CapBnd") == cap_bit(CAP_KILL) ? 0 : 1;
          }) == 0);
  } else {
    CHECK_THAT(error_of([&] { drop_bounding_set(plan, last); }),
               Catch::Contains("drop CAP_CHOWN from the bounding set"));
  }
}

TEST_CASE("capabilities: the default set is podman's 11 and NET_RAW, as Docker's", "[security]") {
  CHECK(default_caps() == (0x800405fbULL | cap_bit(CAP_NET_RAW)));
}

TEST_CASE("capabilities: plans for root and for a non-root user", "[security]") {
  CapabilityRequest req;
  req.defaults = default_caps();
  req.all = all_capabilities(40);
  auto root = plan_capabilities(req);
  CHECK(root.bounding == req.defaults);
  CHECK(root.effective == req.defaults);
  CHECK(root.permitted == req.defaults);
  CHECK(root.inheritable == 0);
  CHECK(root.ambient == 0);

  req.root_user = false;
  auto user = plan_capabilities(req);
  CHECK(user.bounding == req.defaults);
  CHECK(user.effective == 0);
  CHECK(user.permitted == 0);
  CHECK(user.ambient == 0);

  req.add = {"NET_BIND_SERVICE", "net_admin"};
  user = plan_capabilities(req);
  CHECK(user.effective == (cap_bit(CAP_NET_BIND_SERVICE) | cap_bit(CAP_NET_ADMIN)));
  CHECK(user.ambient == user.effective);
  CHECK(user.inheritable == user.effective);
  CHECK((user.bounding & cap_bit(CAP_NET_ADMIN)) != 0);
}

TEST_CASE("capabilities: add, drop, ALL, privileged", "[security]") {
  CapabilityRequest req;
  req.defaults = default_caps();
  req.all = all_capabilities(40);
  req.drop = {"ALL"};
  CHECK(plan_capabilities(req).bounding == 0);
  req.add = {"KILL"};
  CHECK(plan_capabilities(req).effective == cap_bit(CAP_KILL));
  req.drop = {"CHOWN"};
  req.add = {"SYS_TIME"};
  auto p = plan_capabilities(req);
  CHECK(p.bounding == ((req.defaults | cap_bit(CAP_SYS_TIME)) & ~cap_bit(CAP_CHOWN)));
  req.add = {"ALL"};
  req.drop = {};
  CHECK(plan_capabilities(req).bounding == req.all);
  req.add = {};
  req.privileged = true;
  CHECK(plan_capabilities(req).effective == req.all);
  req.privileged = false;
  req.add = {"NET_RAW"};
  req.drop = {"cap_net_raw"};
  CHECK_THAT(error_of([&] { plan_capabilities(req); }),
             Catch::Contains("CAP_NET_RAW is both added and dropped"));
  req.drop = {};
  req.add = {"CAP_WARP_DRIVE"};
  CHECK_THAT(error_of([&] { plan_capabilities(req); }),
             Catch::Contains("--cap-add: unknown capability \"CAP_WARP_DRIVE\""));
  req.add = {"CAP_CHECKPOINT_RESTORE"};  // 40: beyond a kernel whose last cap is 39
  req.all = all_capabilities(39);
  CHECK_THAT(error_of([&] { plan_capabilities(req); }),
             Catch::Contains("not supported by this kernel"));
}

TEST_CASE("capabilities: an OCI config's five sets, exactly", "[security]") {
  ExactCapabilityRequest req;
  req.all = all_capabilities(40);
  req.sets.bounding = {"CAP_KILL", "CAP_CHOWN", "CAP_NET_RAW", "CAP_SETUID"};
  req.sets.effective = {"CAP_KILL"};
  req.sets.permitted = {"CAP_KILL", "CAP_CHOWN"};
  req.sets.inheritable = {"CAP_CHOWN", "cap_net_raw"};
  req.sets.ambient = {"CAP_CHOWN"};
  auto exact = plan_exact_capabilities(req);
  const auto& p = exact.plan;
  CHECK(p.bounding ==
        (cap_bit(CAP_KILL) | cap_bit(CAP_CHOWN) | cap_bit(CAP_NET_RAW) | cap_bit(CAP_SETUID)));
  CHECK(p.effective == cap_bit(CAP_KILL));
  CHECK(p.permitted == (cap_bit(CAP_KILL) | cap_bit(CAP_CHOWN)));
  CHECK(p.inheritable == (cap_bit(CAP_CHOWN) | cap_bit(CAP_NET_RAW)));
  CHECK(p.ambient == cap_bit(CAP_CHOWN));
  CHECK(exact.ambient_not_raised == 0);
  CHECK(exact.unavailable.empty());

  // `runc spec` for root: ambient without inheritable, which the kernel never raises.
  req.sets.ambient = {"CAP_KILL", "CAP_CHOWN"};
  exact = plan_exact_capabilities(req);
  CHECK(exact.plan.ambient == cap_bit(CAP_CHOWN));
  CHECK(exact.ambient_not_raised == cap_bit(CAP_KILL));

  // `mrun exec --cap`: into bounding, effective, permitted; a non-root user's also into
  // inheritable and ambient, so that it survives execve.
  req.add = {"NET_ADMIN"};
  exact = plan_exact_capabilities(req);
  CHECK((exact.plan.bounding & exact.plan.effective & exact.plan.permitted &
         cap_bit(CAP_NET_ADMIN)) != 0);
  CHECK((exact.plan.ambient & cap_bit(CAP_NET_ADMIN)) == 0);
  req.root_user = false;
  exact = plan_exact_capabilities(req);
  CHECK((exact.plan.ambient & exact.plan.inheritable & cap_bit(CAP_NET_ADMIN)) != 0);
  req.add = {};

  // A capability this kernel lacks is left out (runc warns); a made-up name is an error.
  req.all = all_capabilities(39);
  req.sets.permitted.push_back("CAP_CHECKPOINT_RESTORE");
  exact = plan_exact_capabilities(req);
  CHECK(exact.unavailable == std::vector<std::string>{"CAP_CHECKPOINT_RESTORE"});
  CHECK((exact.plan.permitted & cap_bit(40)) == 0);
  req.sets.bounding.push_back("CAP_WARP_DRIVE");
  CHECK_THAT(
      error_of([&] { plan_exact_capabilities(req); }),
      Catch::Contains("process.capabilities.bounding: unknown capability \"CAP_WARP_DRIVE\""));
  req.sets.bounding.pop_back();

  // What capset(2) always refuses, named by set.
  auto refused = [&](const std::function<void(CapabilitySets&)>& edit) {
    ExactCapabilityRequest r = req;
    edit(r.sets);
    return error_of([&] { plan_exact_capabilities(r); });
  };
  CHECK_THAT(
      refused([](CapabilitySets& s) { s.effective.push_back("CAP_SETUID"); }),
      Catch::Contains("process.capabilities.effective: CAP_SETUID not in the permitted set"));
  CHECK_THAT(
      refused([](CapabilitySets& s) { s.inheritable.push_back("CAP_SYS_ADMIN"); }),
      Catch::Contains("process.capabilities.inheritable: CAP_SYS_ADMIN not in the bounding set"));
}

TEST_CASE("security plan: exact sets replace the default set and --cap-add", "[security]") {
  SecurityOptions o;
  o.seccomp = SeccompMode::unconfined;
  o.cap_drop = {"ALL"};  // ignored with exact sets, as the five sets say it all
  o.capability_sets = CapabilitySets{
      {"CAP_KILL", "CAP_CHOWN"}, {"CAP_KILL"}, {"CAP_KILL"}, {"CAP_KILL"}, {"CAP_KILL"}};
  auto plan = prepare_security_plan(o, 1000, false, Logger());
  CHECK(plan.caps.bounding == (cap_bit(CAP_KILL) | cap_bit(CAP_CHOWN)));
  CHECK(plan.caps.ambient == cap_bit(CAP_KILL));
  CHECK(plan.caps.inheritable == cap_bit(CAP_KILL));
  CHECK_FALSE(plan.root_user);
}

TEST_CASE("--security-opt values", "[security]") {
  SecurityOptions o;
  apply_security_opt(o, "seccomp=/x.json");
  CHECK(o.seccomp == SeccompMode::file);
  CHECK(o.seccomp_profile == "/x.json");
  apply_security_opt(o, "seccomp=unconfined");
  CHECK(o.seccomp == SeccompMode::unconfined);
  apply_security_opt(o, "no-new-privileges=false");
  CHECK_FALSE(o.no_new_privileges);
  apply_security_opt(o, "no-new-privileges");
  CHECK(o.no_new_privileges);
  CHECK_THAT(error_of([&] { apply_security_opt(o, "label=disable"); }),
             Catch::Contains("unknown security option \"label\""));
  CHECK_THAT(error_of([&] { apply_security_opt(o, "no-new-privileges=yes"); }),
             Catch::Contains("expected true or false"));
  CHECK_THAT(error_of([&] { apply_security_opt(o, "seccomp="); }),
             Catch::Contains("seccomp needs a value"));
}

TEST_CASE("the built-in profile compiles for x86_64 with its i386 and x32 ABIs", "[security]") {
  auto policy = default_policy();
  auto profile = parse_seccomp_profile(policy.profile_json, policy.profile_origin);
  SeccompTarget target;
  target.capabilities = default_caps();
  auto filter = compile_seccomp(profile, target);
  CHECK(filter.unknown_syscalls.empty());  // every name is known to libseccomp 2.5.4
  CHECK(filter.program.size() > 100);
  if (native_go_arch() == "amd64") {
    CHECK(filter.architectures == std::vector<std::string>{"x86_64", "x86", "x32"});
  }
}

TEST_CASE("without the kernel's x32 ABI the filter leaves it out and answers ENOSYS",
          "[security]") {
  if (native_go_arch() != "amd64") return;
  auto policy = default_policy();
  auto profile = parse_seccomp_profile(policy.profile_json, policy.profile_origin);
  SeccompTarget with_x32;
  with_x32.capabilities = default_caps();
  SeccompTarget without_x32 = with_x32;
  without_x32.x32_syscalls = false;
  auto full = compile_seccomp(profile, with_x32);
  auto lean = compile_seccomp(profile, without_x32);
  CHECK(lean.architectures == std::vector<std::string>{"x86_64", "x86"});
  CHECK(lean.program.size() * 4 < full.program.size() * 3);  // a quarter or more smaller
  CHECK(errno_under(lean, call_x32_getpid) == ENOSYS);       // never a kill
  CHECK(errno_under(lean, call_getpid) == 0);
  CHECK(errno_under(lean, call_keyctl) == EPERM);
  // The cache tells the two apart.
  CHECK(seccomp_cache_key("{}", with_x32) != seccomp_cache_key("{}", without_x32));
}

TEST_CASE("the built-in filter, loaded for real, refuses what it must", "[security]") {
  auto policy = default_policy();
  SeccompTarget target;
  target.capabilities = default_caps();
  auto filter = compile_seccomp(parse_seccomp_profile(policy.profile_json, "default"), target);
  CHECK(errno_under(filter, call_getpid) == 0);
  CHECK(errno_under(filter, call_keyctl) == EPERM);
  CHECK(errno_under(filter, call_unshare_userns) == EPERM);
  CHECK(errno_under(filter, call_bpf) == EPERM);

  // includes.caps: with CAP_SYS_ADMIN in the set, podman's rule allows bpf (the kernel
  // then answers for itself: EINVAL for this null attribute, or EPERM unprivileged).
  target.capabilities |= cap_bit(CAP_SYS_ADMIN);
  auto admin = compile_seccomp(parse_seccomp_profile(policy.profile_json, "default"), target);
  int e = errno_under(admin, call_bpf);
  CHECK((e == EINVAL || e == EPERM || e == EFAULT));
  CHECK(errno_under(admin, call_keyctl) == EPERM);
}

TEST_CASE("unknown syscall names are collected, not fatal", "[security]") {
  auto p = parse_seccomp_profile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["keyctl", "mrun_no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})",
                                 "p.json");
  auto filter = compile_seccomp(p, SeccompTarget{});
  CHECK(filter.unknown_syscalls == std::vector<std::string>{"mrun_no_such_call"});
  CHECK(errno_under(filter, call_keyctl) == EACCES);
  CHECK(errno_under(filter, call_getpid) == 0);
}

TEST_CASE("repeated conditions on one argument are ORed, as runc and crun do", "[security]") {
  auto p = parse_seccomp_profile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13, "args": [
        {"index": 0, "value": 268435456, "op": "SCMP_CMP_EQ"},
        {"index": 0, "value": 131072, "op": "SCMP_CMP_EQ"}]}]})",
                                 "p.json");
  auto filter = compile_seccomp(p, SeccompTarget{});
  CHECK(errno_under(filter, call_unshare_userns) == EACCES);
}

TEST_CASE("security plan: unconfined, privileged, bad profile path", "[security]") {
  Logger quiet;
  SecurityOptions o;
  o.seccomp = SeccompMode::unconfined;
  auto plan = prepare_security_plan(o, 0, false, quiet);
  CHECK_FALSE(plan.seccomp);
  o = {};
  o.privileged = true;
  plan = prepare_security_plan(o, 0, false, quiet);
  CHECK_FALSE(plan.seccomp);
  CHECK(plan.caps.effective == all_capabilities(plan.last_cap));
  o = {};
  o.no_new_privileges = false;
  plan = prepare_security_plan(o, 1000, false, quiet);
  CHECK(plan.keep_sys_admin_until_seccomp());
  CHECK(plan.caps.effective == 0);
  o = {};
  o.seccomp = SeccompMode::file;
  o.seccomp_profile = "/nonexistent/mrun-profile.json";
  CHECK_THAT(error_of([&] { prepare_security_plan(o, 0, false, quiet); }),
             Catch::Contains("/nonexistent/mrun-profile.json"));
}

TEST_CASE("seccomp cache: reused only for the exact same key, never from a foreign file",
          "[security]") {
  Logger quiet;
  mrun::test::TempDir temp("cache");
  const std::string dir = temp.path + "/seccomp";
  auto policy = default_policy();
  SeccompTarget target;
  target.capabilities = default_caps();
  target.kernel_release = "6.1.0";
  auto filter = compile_seccomp(parse_seccomp_profile(policy.profile_json, "default"), target);
  const std::string key = seccomp_cache_key(policy.profile_json, target);

  CHECK_FALSE(load_cached_seccomp(dir, key, quiet));
  store_cached_seccomp(dir, key, filter, quiet);
  auto cached = load_cached_seccomp(dir, key, quiet);
  REQUIRE(cached);
  CHECK(cached->program.size() == filter.program.size());
  CHECK(std::memcmp(cached->program.data(), filter.program.data(),
                    filter.program.size() * sizeof(sock_filter)) == 0);
  CHECK(cached->architectures == filter.architectures);
  CHECK(errno_under(*cached, call_keyctl) == EPERM);

  // Another capability set or profile text is another key.
  SeccompTarget other = target;
  other.capabilities |= cap_bit(CAP_SYS_ADMIN);
  CHECK_FALSE(load_cached_seccomp(dir, seccomp_cache_key(policy.profile_json, other), quiet));
  CHECK_FALSE(
      load_cached_seccomp(dir, seccomp_cache_key(policy.profile_json + " ", target), quiet));

  // A cache directory others may write to is not trusted.
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  CHECK_FALSE(load_cached_seccomp(dir, key, quiet));
  REQUIRE(::chmod(dir.c_str(), 0700) == 0);
  CHECK(load_cached_seccomp(dir, key, quiet));
}

TEST_CASE("profile: one that denies execve is known before any container starts", "[security]") {
  auto parsed = [](const std::string& text) { return parse_seccomp_profile(text, "t.json"); };
  REQUIRE_FALSE(allows_execve(parsed(R"({"defaultAction":"SCMP_ACT_ERRNO"})")));
  REQUIRE_FALSE(allows_execve(parsed(R"({"defaultAction":"SCMP_ACT_KILL"})")));
  REQUIRE_FALSE(allows_execve(parsed(
      R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["execve"],"action":"SCMP_ACT_ERRNO"}]})")));
  REQUIRE(allows_execve(parsed(R"({"defaultAction":"SCMP_ACT_ALLOW"})")));
  REQUIRE(allows_execve(parsed(R"({"defaultAction":"SCMP_ACT_LOG"})")));
  REQUIRE(allows_execve(parsed(
      R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","execve"],"action":"SCMP_ACT_ALLOW"}]})")));
  REQUIRE(allows_execve(parse_seccomp_profile(mrun::security::default_policy().profile_json, "d")));
}
