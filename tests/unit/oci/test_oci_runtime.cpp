// The pure parts of the OCI runtime verbs: hooks (conversion, order, persistence, and
// running real programs with the state on stdin), cgroupsPath, process.json, --log
// lines, the keyring name, exec's defaults, and finding a pid namespace's processes.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.hpp"
#include "base/log.hpp"
#include "exec/exec.hpp"
#include "init/container_init.hpp"
#include "lifecycle/processes.hpp"
#include "oci/spec.hpp"
#include "runtime/hooks.hpp"
#include "temp_dir.hpp"

using namespace mrun;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("config.json hooks become the runtime's, every stage, in order") {
  json j = json::parse(oci::to_json(oci::default_spec(true, 1000, 1000)).dump());
  for (const auto& stage : runtime::hook_stage_names()) {
    j["hooks"][stage] = {{{"path", "/bin/" + stage + "-a"}, {"args", {"a", "1"}}, {"timeout", 3}},
                         {{"path", "/bin/" + stage + "-b"}, {"env", {"X=1"}}}};
  }
  j["root"]["path"] = "/rootfs";
  auto spec = oci::parse_spec(j.dump());
  oci::validate(spec);
  auto c = oci::to_container_config(spec, "/bundle", "c1", 1000, 1000, Logger());
  for (const auto& stage : runtime::hook_stage_names()) {
    const auto& list = runtime::hooks_of(c.hooks, stage);
    REQUIRE(list.size() == 2);
    REQUIRE(list[0].path == "/bin/" + stage + "-a");
    REQUIRE(list[0].args == std::vector<std::string>{"a", "1"});
    REQUIRE(list[0].timeout == 3);
    REQUIRE(list[1].env == std::vector<std::string>{"X=1"});
  }
  REQUIRE(runtime::hook_stage_names() ==
          std::vector<std::string>{"prestart", "createRuntime", "createContainer", "startContainer",
                                   "poststart", "poststop"});
  // Persisted for start and delete: a round trip keeps every field.
  auto back = runtime::hooks_from_json(runtime::hooks_to_json(c.hooks));
  REQUIRE(runtime::hooks_to_json(back) == runtime::hooks_to_json(c.hooks));
  REQUIRE(back.poststop[0].timeout == 3);
}

TEST_CASE("hooks run in order with the state on stdin; failures and timeouts are errors") {
  mrun::test::TempDir temp("hooks");
  const std::string& dir = temp.path;
  std::string out = dir + "/out";
  std::vector<runtime::Hook> hooks{
      {"/bin/sh", {"sh", "-c", "echo first >> " + out + "; cat >> " + out}, {"A=1"}, {}},
      {"/bin/sh", {"sh", "-c", "echo \"second $A$B\" >> " + out}, {"B=2"}, 5},
  };
  runtime::run_hooks(hooks, "prestart", R"({"id":"c1"})");
  REQUIRE(slurp(out) == "first\n{\"id\":\"c1\"}second 2\n");

  std::vector<runtime::Hook> failing{{"/bin/sh", {"sh", "-c", "exit 3"}, {}, {}},
                                     {"/bin/sh", {"sh", "-c", "echo never >> " + out}, {}, {}}};
  try {
    runtime::run_hooks(failing, "createRuntime", "{}");
    FAIL("a failing hook must throw");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("hook createRuntime[0] /bin/sh: exited with status 3"));
  }
  REQUIRE(slurp(out).find("never") == std::string::npos);

  std::vector<runtime::Hook> slow{{"/bin/sleep", {"sleep", "30"}, {}, 1}};
  try {
    runtime::run_hooks(slow, "poststart", "{}");
    FAIL("a hook past its timeout must throw");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("timed out after 1s"));
  }
  std::vector<runtime::Hook> missing{{"/nonexistent/hook", {}, {}, {}}};
  REQUIRE_THROWS_AS(runtime::run_hooks(missing, "poststop", "{}"), Error);
}

TEST_CASE("linux.cgroupsPath: systemd slice:prefix:name and cgroupfs paths") {
  REQUIRE(oci::cgroup_parent_from_path("user.slice:libpod:abc") == "user.slice");
  REQUIRE(oci::cgroup_parent_from_path("machine-podman.slice:libpod:abc") ==
          "machine.slice/machine-podman.slice");
  REQUIRE(oci::cgroup_parent_from_path(":libpod:abc").empty());
  REQUIRE(oci::cgroup_parent_from_path("-.slice:x:y").empty());
  REQUIRE(oci::cgroup_parent_from_path("/libpod_parent/libpod-abc") == "libpod_parent");
  REQUIRE(oci::cgroup_parent_from_path("/a/b/c") == "a/b");
  REQUIRE(oci::cgroup_parent_from_path("/single").empty());
  // The leaf is the path's own cgroup, named as runc names it: the container's cgroup
  // is where the engine (and the kubelet's cadvisor) look for it.
  REQUIRE(oci::cgroup_leaf_from_path("/kubepods/burstable/pod1/abc") == "abc");
  REQUIRE(oci::cgroup_leaf_from_path("/single") == "single");
  REQUIRE(oci::cgroup_leaf_from_path("default/ctr1") == "ctr1");
  REQUIRE(oci::cgroup_leaf_from_path("machine.slice:libpod:abc") == "libpod-abc.scope");
  REQUIRE(oci::cgroup_leaf_from_path("system.slice::abc") == "abc.scope");
  REQUIRE(oci::cgroup_leaf_from_path("kubepods.slice:cri-containerd:pod1.slice") == "pod1.slice");
}

TEST_CASE("process.json for exec --process") {
  auto p = oci::parse_process_text(
      R"({"terminal":true,"user":{"uid":5,"gid":6},"args":["sh","-c","id"],"env":["A=1"],)"
      R"("cwd":"/tmp","noNewPrivileges":true,"capabilities":{"bounding":["CAP_KILL"],)"
      R"("effective":["CAP_KILL"],"permitted":["CAP_KILL"]}})");
  REQUIRE(p.args == std::vector<std::string>{"sh", "-c", "id"});
  REQUIRE(p.terminal == true);
  REQUIRE(p.user.uid == 5);
  REQUIRE(p.cwd == "/tmp");
  security::SecurityOptions sec;
  sec.cap_add = {"CAP_SYS_ADMIN"};  // the container's own, replaced by the file's sets
  oci::convert_process_security(p, sec);
  REQUIRE(sec.no_new_privileges);
  REQUIRE(sec.cap_add.empty());
  REQUIRE(sec.capability_sets);
  REQUIRE(sec.capability_sets->bounding == std::vector<std::string>{"CAP_KILL"});
  REQUIRE(sec.capability_sets->effective == std::vector<std::string>{"CAP_KILL"});
  REQUIRE(sec.capability_sets->inheritable.empty());  // absent: empty, not the bounding set

  // additionalGids, umask, rlimits and oomScoreAdj: what create gets from config.json.
  runtime::ProcessSpec settings;
  oci::overlay_process(
      oci::parse_process_text(
          R"({"user":{"uid":5,"gid":6,"additionalGids":[10,11],"umask":18},"args":["id"],)"
          R"("rlimits":[{"type":"RLIMIT_NOFILE","soft":64,"hard":128}],"oomScoreAdj":500})"),
      settings);
  REQUIRE((settings.user.uid == 5 && settings.user.gid == 6));
  REQUIRE(settings.user.additional_gids == std::vector<gid_t>{10, 11});
  REQUIRE(settings.umask == 022);
  REQUIRE(settings.rlimits.size() == 1);
  REQUIRE((settings.rlimits[0].type == "RLIMIT_NOFILE" && settings.rlimits[0].soft == 64 &&
           settings.rlimits[0].hard == 128));
  REQUIRE(settings.oom_score_adj == 500);
  auto settings_error = [](const std::string& text) {
    try {
      runtime::ProcessSpec out;
      oci::overlay_process(oci::parse_process_text(text), out);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  REQUIRE_THAT(
      settings_error(R"({"args":["x"],"rlimits":[{"type":"RLIMIT_FLY","soft":1,"hard":1}]})"),
      Catch::Contains("process.rlimits: unknown rlimit \"RLIMIT_FLY\""));
  REQUIRE_THAT(
      settings_error(R"({"args":["x"],"rlimits":[{"type":"RLIMIT_NOFILE","soft":9,"hard":8}]})"),
      Catch::Contains("RLIMIT_NOFILE: soft limit 9 is above the hard limit 8"));
  REQUIRE_THAT(settings_error(R"({"args":["x"],"oomScoreAdj":1001})"),
               Catch::Contains("process.oomScoreAdj 1001 is outside -1000..1000"));

  auto message = [](const std::string& text) {
    try {
      oci::parse_process_text(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  REQUIRE_THAT(message("{not json"), Catch::StartsWith("process.json: malformed JSON"));
  REQUIRE_THAT(message(R"({"args":[]})"), Catch::Contains("args must not be empty"));
  REQUIRE_THAT(message(R"({"args":["x"],"cwd":"rel"})"), Catch::Contains("must be an absolute"));
  REQUIRE_THAT(message(R"({"args":"x"})"), Catch::StartsWith("process.json: process.args"));
}

TEST_CASE("--log lines: runc's JSON and logrus text") {
  timespec when{1700000000, 123456789};
  auto line =
      format_log_line(LogLevel::error, "container does not exist: \"x\"", when, LogFormat::json);
  auto j = json::parse(line);
  REQUIRE(j["level"] == "error");
  REQUIRE(j["msg"] == "container does not exist: \"x\"");
  REQUIRE(j["time"] == "2023-11-14T22:13:20.123456789Z");
  REQUIRE(line.find('\n') == std::string::npos);
  REQUIRE(format_log_line(LogLevel::warning, "a \"b\"", when, LogFormat::text) ==
          "time=\"2023-11-14T22:13:20.123456789Z\" level=warning msg=\"a \\\"b\\\"\"");
}

TEST_CASE("the session keyring is named as runc names it") {
  REQUIRE(runtime::session_keyring_name("web1") == "_ses.web1");
}

TEST_CASE("exec: the container's defaults, env merge, --user") {
  runtime::ContainerConfig c;
  c.process.env = {"PATH=/bin", "A=1"};
  c.process.cwd = "/srv";
  c.process.user = {7, 8};
  c.process.security.cap_drop = {"ALL"};
  c.process.security.cap_add = {"CAP_KILL"};
  c.process.security.seccomp = security::SeccompMode::file;
  c.process.security.seccomp_profile = "/p.json";
  c.process.keep_groups = true;
  c.process.user.additional_gids = {10, 20};
  c.process.umask = 027;
  c.process.rlimits = {{"RLIMIT_NOFILE", 100, 200}};
  c.process.oom_score_adj = -5;
  runtime::PrivilegeModel privilege;
  privilege.host_capabilities = true;
  auto d = runtime::exec_defaults_from_json(
      runtime::exec_defaults_to_json(runtime::exec_defaults_of(c, privilege)));
  REQUIRE(d.process.env == c.process.env);
  REQUIRE(d.process.cwd == "/srv");
  REQUIRE((d.process.user.uid == 7 && d.process.user.gid == 8));
  REQUIRE(d.process.security.cap_add == c.process.security.cap_add);
  REQUIRE(d.process.security.seccomp == security::SeccompMode::file);
  REQUIRE(d.process.security.seccomp_profile == "/p.json");
  REQUIRE(d.process.keep_groups);
  REQUIRE(d.host_capabilities);
  // What exec needs to start its process as the container's own (rlimits and the rest).
  REQUIRE(d.process.user.additional_gids == std::vector<gid_t>{10, 20});
  REQUIRE(d.process.umask == 027);
  REQUIRE(d.process.rlimits.size() == 1);
  REQUIRE((d.process.rlimits[0].type == "RLIMIT_NOFILE" && d.process.rlimits[0].soft == 100 &&
           d.process.rlimits[0].hard == 200));
  REQUIRE(d.process.oom_score_adj == -5);
  REQUIRE_FALSE(d.process.security.capability_sets);
  c.process.security.capability_sets =
      security::CapabilitySets{{"CAP_KILL"}, {}, {"CAP_KILL"}, {}, {}};
  d = runtime::exec_defaults_from_json(
      runtime::exec_defaults_to_json(runtime::exec_defaults_of(c, privilege)));
  REQUIRE(d.process.security.capability_sets);
  REQUIRE(d.process.security.capability_sets->bounding == std::vector<std::string>{"CAP_KILL"});
  REQUIRE(d.process.security.capability_sets->effective.empty());
  REQUIRE(d.process.security.capability_sets->permitted == std::vector<std::string>{"CAP_KILL"});
  // An exec.json of an older mrun has none of the new fields.
  auto old = json::parse(runtime::exec_defaults_to_json(runtime::exec_defaults_of({}, privilege)));
  for (const char* key :
       {"additional_gids", "capability_sets", "rlimits", "umask", "oom_score_adj"})
    old.erase(key);
  auto older = runtime::exec_defaults_from_json(old.dump());
  REQUIRE((older.process.rlimits.empty() && !older.process.umask && !older.process.oom_score_adj));
  REQUIRE((older.process.user.additional_gids.empty() && !older.process.security.capability_sets));

  REQUIRE(runtime::merge_env({"A=1", "B=2"}, {"B=3", "C=4"}) ==
          std::vector<std::string>{"A=1", "B=3", "C=4"});
  auto u = runtime::parse_exec_user("12", {0, 9, false, {4, 5}});
  REQUIRE((u.uid == 12 && u.gid == 9));
  REQUIRE(u.additional_gids == std::vector<gid_t>{4, 5});  // runc's -u changes the ids only
  u = runtime::parse_exec_user("12:13", {0, 9});
  REQUIRE((u.uid == 12 && u.gid == 13));
  REQUIRE_THROWS_AS(runtime::parse_exec_user("root", {}), Error);
  REQUIRE_THROWS_AS(runtime::parse_exec_user("1:2:3", {}), Error);
}

TEST_CASE("the processes of a pid namespace are found through /proc") {
  struct stat st {};
  REQUIRE(::stat("/proc/self/ns/pid", &st) == 0);
  auto pids = runtime::processes_in_pid_namespace("/proc", st);
  REQUIRE(std::find(pids.begin(), pids.end(), ::getpid()) != pids.end());
  REQUIRE(std::is_sorted(pids.begin(), pids.end()));
  struct stat other = st;
  other.st_ino += 123456789;
  REQUIRE(runtime::processes_in_pid_namespace("/proc", other).empty());
}

TEST_CASE("process.ioPriority and process.scheduler: the kernel's names and ranges") {
  auto overlaid = [](const std::string& text) {
    runtime::ProcessSpec out;
    oci::overlay_process(oci::parse_process_text(text), out);
    return out;
  };
  auto error_of = [&](const std::string& text) {
    try {
      overlaid(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto p = overlaid(R"({"args":["x"],"ioPriority":{"class":"IOPRIO_CLASS_IDLE","priority":0},)"
                    R"("scheduler":{"policy":"SCHED_BATCH","nice":5,)"
                    R"("flags":["SCHED_FLAG_RESET_ON_FORK"]}})");
  REQUIRE(p.io_priority == runtime::IoPriority{3, 0});
  REQUIRE(p.scheduler == runtime::Scheduler{3, 5, 0, 0x01, 0, 0, 0});
  p = overlaid(R"({"args":["x"],"scheduler":{"policy":"SCHED_DEADLINE","runtime":1000,)"
               R"("deadline":2000,"period":3000}})");
  REQUIRE((p.scheduler->policy == 6 && p.scheduler->runtime == 1000 &&
           p.scheduler->deadline == 2000 && p.scheduler->period == 3000));
  REQUIRE_FALSE(overlaid(R"({"args":["x"]})").scheduler);  // absent: inherited, untouched

  REQUIRE_THAT(error_of(R"({"args":["x"],"ioPriority":{"class":"IOPRIO_CLASS_XX"}})"),
               Catch::Contains("process.ioPriority.class: \"IOPRIO_CLASS_XX\" is not one of"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"ioPriority":{"class":"IOPRIO_CLASS_BE","priority":8}})"),
               Catch::Contains("process.ioPriority.priority: 8 is outside 0..7"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"ioPriority":{"priority":1}})"),
               Catch::Contains("process.ioPriority.class: is required"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"nice":1}})"),
               Catch::Contains("process.scheduler.policy: is required"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_OTHER","nice":20}})"),
               Catch::Contains("process.scheduler.nice: 20 is outside -20..19"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_FIFO"}})"),
               Catch::Contains("process.scheduler.priority: 0 is outside 1..99"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_BATCH","priority":3}})"),
               Catch::Contains("process.scheduler.priority: must be 0 for SCHED_BATCH"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_RR","priority":1,)"
                        R"("period":5}})"),
               Catch::Contains("for SCHED_DEADLINE only, not SCHED_RR"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_OTHER","flags":["X"]}})"),
               Catch::Contains("process.scheduler.flags: \"X\" is not one of"));
  REQUIRE_THAT(error_of(R"({"args":["x"],"scheduler":{"policy":"SCHED_OTHER","nice":"5"}})"),
               Catch::Contains("process.scheduler.nice: wrong type (string)"));
}
