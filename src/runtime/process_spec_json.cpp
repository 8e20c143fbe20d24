#include "runtime/process_spec_json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::runtime {

using nlohmann::json;

namespace {

std::string seccomp_mode_name(security::SeccompMode mode) {
  switch (mode) {
    case security::SeccompMode::automatic: return "automatic";
    case security::SeccompMode::unconfined: return "unconfined";
    case security::SeccompMode::file: return "file";
  }
  return "automatic";
}

security::SeccompMode seccomp_mode_from(const std::string& name) {
  if (name == "unconfined") return security::SeccompMode::unconfined;
  if (name == "file") return security::SeccompMode::file;
  return security::SeccompMode::automatic;
}

json capability_sets_to_json(const std::optional<security::CapabilitySets>& sets) {
  if (!sets) return nullptr;
  return {{"bounding", sets->bounding},
          {"effective", sets->effective},
          {"permitted", sets->permitted},
          {"inheritable", sets->inheritable},
          {"ambient", sets->ambient}};
}

std::optional<security::CapabilitySets> capability_sets_from_json(const json& j) {
  if (j.is_null()) return std::nullopt;
  security::CapabilitySets sets;
  sets.bounding = j.at("bounding").get<std::vector<std::string>>();
  sets.effective = j.at("effective").get<std::vector<std::string>>();
  sets.permitted = j.at("permitted").get<std::vector<std::string>>();
  sets.inheritable = j.at("inheritable").get<std::vector<std::string>>();
  sets.ambient = j.at("ambient").get<std::vector<std::string>>();
  return sets;
}

json rlimits_to_json(const std::vector<Rlimit>& rlimits) {
  json out = json::array();
  for (const auto& r : rlimits)
    out.push_back({{"type", r.type}, {"soft", r.soft}, {"hard", r.hard}});
  return out;
}

std::vector<Rlimit> rlimits_from_json(const json& j) {
  std::vector<Rlimit> out;
  for (const auto& r : j) {
    out.push_back({r.at("type").get<std::string>(), r.at("soft").get<std::uint64_t>(),
                   r.at("hard").get<std::uint64_t>()});
  }
  return out;
}

}  // namespace

json process_to_json(const ProcessSpec& p) {
  json j = {{"args", p.args},
            {"env", p.env},
            {"cwd", p.cwd},
            {"terminal", p.terminal},
            {"uid", p.user.uid},
            {"gid", p.user.gid},
            {"gid_from_image", p.user.gid_from_image},
            {"additional_gids", p.user.additional_gids},
            {"seccomp", seccomp_mode_name(p.security.seccomp)},
            {"seccomp_profile", p.security.seccomp_profile},
            {"seccomp_profile_json", p.security.seccomp_profile_json},
            {"no_new_privileges", p.security.no_new_privileges},
            {"cap_add", p.security.cap_add},
            {"cap_drop", p.security.cap_drop},
            {"privileged", p.security.privileged},
            {"capability_sets", capability_sets_to_json(p.security.capability_sets)},
            {"keep_groups", p.keep_groups},
            {"rlimits", rlimits_to_json(p.rlimits)}};
  if (p.umask) j["umask"] = *p.umask;
  if (p.oom_score_adj) j["oom_score_adj"] = *p.oom_score_adj;
  if (p.personality) j["personality"] = *p.personality;
  if (!p.apparmor_profile.empty()) j["apparmor_profile"] = p.apparmor_profile;
  if (!p.selinux_label.empty()) j["selinux_label"] = p.selinux_label;
  if (p.memory_policy) {
    j["memory_policy"] = {{"mode", p.memory_policy->mode},
                          {"flags", p.memory_policy->flags},
                          {"nodemask", p.memory_policy->nodemask}};
  }
  if (p.io_priority) {
    j["io_priority"] = {{"class", p.io_priority->io_class}, {"priority", p.io_priority->priority}};
  }
  if (const auto& s = p.scheduler) {
    j["scheduler"] = {{"policy", s->policy}, {"nice", s->nice},       {"priority", s->priority},
                      {"flags", s->flags},   {"runtime", s->runtime}, {"deadline", s->deadline},
                      {"period", s->period}};
  }
  return j;
}

ProcessSpec process_from_json(const json& j) {
  const ProcessSpec d;  // what a missing key reads as
  ProcessSpec p;
  p.args = j.value("args", d.args);
  p.env = j.value("env", d.env);
  p.cwd = j.value("cwd", d.cwd);
  p.terminal = j.value("terminal", d.terminal);
  p.user.uid = j.value("uid", d.user.uid);
  p.user.gid = j.value("gid", d.user.gid);
  p.user.gid_from_image = j.value("gid_from_image", d.user.gid_from_image);
  p.user.additional_gids = j.value("additional_gids", d.user.additional_gids);
  if (j.contains("seccomp"))
    p.security.seccomp = seccomp_mode_from(j.at("seccomp").get<std::string>());
  p.security.seccomp_profile = j.value("seccomp_profile", d.security.seccomp_profile);
  p.security.seccomp_profile_json =
      j.value("seccomp_profile_json", d.security.seccomp_profile_json);
  p.security.no_new_privileges = j.value("no_new_privileges", d.security.no_new_privileges);
  p.security.cap_add = j.value("cap_add", d.security.cap_add);
  p.security.cap_drop = j.value("cap_drop", d.security.cap_drop);
  p.security.privileged = j.value("privileged", d.security.privileged);
  p.security.capability_sets = capability_sets_from_json(j.value("capability_sets", json()));
  p.keep_groups = j.value("keep_groups", d.keep_groups);
  p.rlimits = rlimits_from_json(j.value("rlimits", json::array()));
  if (j.contains("umask")) p.umask = j.at("umask").get<mode_t>();
  if (j.contains("oom_score_adj")) p.oom_score_adj = j.at("oom_score_adj").get<int>();
  if (j.contains("personality")) p.personality = j.at("personality").get<unsigned long>();
  p.apparmor_profile = j.value("apparmor_profile", d.apparmor_profile);
  p.selinux_label = j.value("selinux_label", d.selinux_label);
  if (j.contains("memory_policy")) {
    const json& m = j.at("memory_policy");
    p.memory_policy = MemoryPolicy{m.at("mode").get<int>(), m.at("flags").get<unsigned>(),
                                   m.at("nodemask").get<std::vector<unsigned long>>()};
  }
  if (j.contains("io_priority")) {
    const json& io = j.at("io_priority");
    p.io_priority = IoPriority{io.at("class").get<int>(), io.at("priority").get<int>()};
  }
  if (j.contains("scheduler")) {
    const json& s = j.at("scheduler");
    p.scheduler =
        Scheduler{s.at("policy").get<unsigned>(),       s.at("nice").get<int>(),
                  s.at("priority").get<unsigned>(),     s.at("flags").get<std::uint64_t>(),
                  s.at("runtime").get<std::uint64_t>(), s.at("deadline").get<std::uint64_t>(),
                  s.at("period").get<std::uint64_t>()};
  }
  return p;
}

}  // namespace mrun::runtime
