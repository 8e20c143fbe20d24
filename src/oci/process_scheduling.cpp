#include "oci/process_scheduling.hpp"

#include <cstdint>
#include <map>

#include "oci/json_fields.hpp"

namespace mrun::oci {

namespace {

template <typename T>
T known(const std::map<std::string, T>& names, const std::string& name, const std::string& field) {
  auto it = names.find(name);
  if (it == names.end()) {
    std::string list;
    for (const auto& [known_name, value] : names) list += (list.empty() ? "" : ", ") + known_name;
    throw bad(field, "\"" + name + "\" is not one of " + list);
  }
  return it->second;
}

std::string required_name(const json& object, const char* key, const std::string& where) {
  std::optional<std::string> name;
  get(object, key, name, where);
  if (!name) throw bad(where + key, "is required");
  return *name;
}

}  // namespace

runtime::IoPriority parse_io_priority(const json& value) {
  const std::string where = "process.ioPriority.";
  object_at(value, "process.ioPriority");
  static const std::map<std::string, int> classes{
      {"IOPRIO_CLASS_RT", 1}, {"IOPRIO_CLASS_BE", 2}, {"IOPRIO_CLASS_IDLE", 3}};
  runtime::IoPriority io;
  io.io_class = known(classes, required_name(value, "class", where), where + "class");
  get(value, "priority", io.priority, where);
  if (io.priority < 0 || io.priority > 7) {
    throw bad(where + "priority", std::to_string(io.priority) + " is outside 0..7");
  }
  return io;
}

runtime::Scheduler parse_scheduler(const json& value) {
  const std::string where = "process.scheduler.";
  object_at(value, "process.scheduler");
  static const std::map<std::string, unsigned> policies{
      {"SCHED_OTHER", 0}, {"SCHED_FIFO", 1}, {"SCHED_RR", 2},      {"SCHED_BATCH", 3},
      {"SCHED_ISO", 4},   {"SCHED_IDLE", 5}, {"SCHED_DEADLINE", 6}};
  static const std::map<std::string, std::uint64_t> flag_bits{
      {"SCHED_FLAG_RESET_ON_FORK", 0x01}, {"SCHED_FLAG_RECLAIM", 0x02},
      {"SCHED_FLAG_DL_OVERRUN", 0x04},    {"SCHED_FLAG_KEEP_POLICY", 0x08},
      {"SCHED_FLAG_KEEP_PARAMS", 0x10},   {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
      {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40}};
  runtime::Scheduler s;
  const std::string policy = required_name(value, "policy", where);
  s.policy = known(policies, policy, where + "policy");
  get(value, "nice", s.nice, where);
  get(value, "priority", s.priority, where);
  get(value, "runtime", s.runtime, where);
  get(value, "deadline", s.deadline, where);
  get(value, "period", s.period, where);
  std::vector<std::string> flags;
  get(value, "flags", flags, where);
  for (const auto& flag : flags) s.flags |= known(flag_bits, flag, where + "flags");
  if (s.nice < -20 || s.nice > 19) {
    throw bad(where + "nice", std::to_string(s.nice) + " is outside -20..19");
  }
  const bool real_time = policy == "SCHED_FIFO" || policy == "SCHED_RR";
  if (real_time && (s.priority < 1 || s.priority > 99)) {
    throw bad(where + "priority",
              std::to_string(s.priority) + " is outside 1..99, which " + policy + " needs");
  }
  if (!real_time && s.priority != 0) {
    throw bad(where + "priority",
              "must be 0 for " + policy + " (only SCHED_FIFO and SCHED_RR take one)");
  }
  if (policy != "SCHED_DEADLINE" && (s.runtime != 0 || s.deadline != 0 || s.period != 0)) {
    throw bad("process.scheduler",
              "runtime, deadline and period are for SCHED_DEADLINE only, not " + policy);
  }
  return s;
}

}  // namespace mrun::oci
