// The one process model: exec.json keeps every member of ProcessSpec, and an exec.json
// without a member reads as its default.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runtime/process_spec.hpp"
#include "runtime/process_spec_json.hpp"

using namespace mrun::runtime;

namespace {
// A value other than the default in every member, so that a member the JSON forgets
// comes back different.
ProcessSpec every_member_set() {
  ProcessSpec p;
  p.args = {"/bin/sh", "-c", "true"};
  p.env = {"PATH=/bin", "A=1"};
  p.cwd = "/srv";
  p.user = {7, 8, true, {10, 20}};
  p.terminal = true;
  p.security.seccomp = mrun::security::SeccompMode::file;
  p.security.seccomp_profile = "/p.json";
  p.security.seccomp_profile_json = R"({"defaultAction":"SCMP_ACT_ALLOW"})";
  p.security.no_new_privileges = false;
  p.security.cap_add = {"NET_ADMIN"};
  p.security.cap_drop = {"ALL"};
  p.security.privileged = true;
  p.security.capability_sets = mrun::security::CapabilitySets{
      {"CAP_KILL"}, {"CAP_CHOWN"}, {"CAP_KILL"}, {"CAP_FOWNER"}, {"CAP_SETUID"}};
  p.umask = 027;
  p.rlimits = {{"RLIMIT_NOFILE", 100, 200}, {"RLIMIT_CORE", 0, 0}};
  p.oom_score_adj = -5;
  p.personality = 8;
  p.memory_policy = MemoryPolicy{2, 1u << 15, {3}};
  p.io_priority = IoPriority{2, 6};
  p.scheduler = Scheduler{6, 0, 0, 0x01, 10'000'000, 30'000'000, 30'000'000};
  p.apparmor_profile = "mrun-default";
  p.selinux_label = "system_u:system_r:container_t:s0";
  p.keep_groups = true;
  return p;
}
}  // namespace

TEST_CASE("every member of the process survives exec.json") {
  const ProcessSpec p = every_member_set();
  REQUIRE(process_from_json(nlohmann::json::parse(process_to_json(p).dump())) == p);
  // and a default one stays the default
  REQUIRE(process_from_json(process_to_json(ProcessSpec{})) == ProcessSpec{});
}

TEST_CASE("an exec.json without a member reads as that member's default") {
  const ProcessSpec p = every_member_set();
  const nlohmann::json full = process_to_json(p);
  for (auto it = full.begin(); it != full.end(); ++it) {
    nlohmann::json without = full;
    without.erase(it.key());
    INFO("without " << it.key());
    ProcessSpec read = process_from_json(without);
    REQUIRE_FALSE(read == p);  // each key carries something of its own
  }
  REQUIRE(process_from_json(nlohmann::json::object()) == ProcessSpec{});
}
