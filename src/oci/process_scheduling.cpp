#include "oci/process_scheduling.hpp"

#include <cerrno>
#include <cstdint>
#include <limits>
#include <map>

#include "base/error.hpp"

namespace mrun::oci {

using nlohmann::json;

namespace {

struct Field {
  const std::string& source;
  std::string name;
  Error bad(const std::string& what) const {
    return Error(source + ": " + name + ": " + what, EINVAL);
  }
};

template <typename T>
T number_at(const json& object, const std::string& key, const Field& parent, T fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  const Field field{parent.source, parent.name + "." + key};
  if (!it->is_number_integer()) throw field.bad("must be an integer");
  if (it->is_number_unsigned()) {
    auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
      throw field.bad(std::to_string(v) + " is out of range");
    }
    return static_cast<T>(v);
  }
  auto v = it->get<std::int64_t>();
  if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
      (v > 0 && static_cast<std::uint64_t>(v) > std::uint64_t{std::numeric_limits<T>::max()})) {
    throw field.bad(std::to_string(v) + " is out of range");
  }
  return static_cast<T>(v);
}

std::string name_at(const json& object, const std::string& key, const Field& parent) {
  auto it = object.find(key);
  const Field field{parent.source, parent.name + "." + key};
  if (it == object.end() || it->is_null()) throw field.bad("is required");
  if (!it->is_string()) throw field.bad("must be a string");
  return it->get<std::string>();
}

template <typename T>
T known(const std::map<std::string, T>& names, const std::string& name, const Field& field) {
  auto it = names.find(name);
  if (it == names.end()) {
    std::string list;
    for (const auto& [known_name, value] : names) list += (list.empty() ? "" : ", ") + known_name;
    throw field.bad("\"" + name + "\" is not one of " + list);
  }
  return it->second;
}

}  // namespace

runtime::IoPriority parse_io_priority(const json& value, const std::string& source) {
  const Field field{source, "process.ioPriority"};
  if (!value.is_object()) throw field.bad("must be an object");
  static const std::map<std::string, int> classes{
      {"IOPRIO_CLASS_RT", 1}, {"IOPRIO_CLASS_BE", 2}, {"IOPRIO_CLASS_IDLE", 3}};
  runtime::IoPriority io;
  io.io_class = known(classes, name_at(value, "class", field), {source, field.name + ".class"});
  io.priority = number_at<int>(value, "priority", field, 0);
  if (io.priority < 0 || io.priority > 7) {
    throw Field{source, field.name + ".priority"}.bad(std::to_string(io.priority) +
                                                      " is outside 0..7");
  }
  return io;
}

runtime::Scheduler parse_scheduler(const json& value, const std::string& source) {
  const Field field{source, "process.scheduler"};
  if (!value.is_object()) throw field.bad("must be an object");
  static const std::map<std::string, unsigned> policies{
      {"SCHED_OTHER", 0}, {"SCHED_FIFO", 1}, {"SCHED_RR", 2},      {"SCHED_BATCH", 3},
      {"SCHED_ISO", 4},   {"SCHED_IDLE", 5}, {"SCHED_DEADLINE", 6}};
  static const std::map<std::string, std::uint64_t> flag_bits{
      {"SCHED_FLAG_RESET_ON_FORK", 0x01}, {"SCHED_FLAG_RECLAIM", 0x02},
      {"SCHED_FLAG_DL_OVERRUN", 0x04},    {"SCHED_FLAG_KEEP_POLICY", 0x08},
      {"SCHED_FLAG_KEEP_PARAMS", 0x10},   {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
      {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40}};
  runtime::Scheduler s;
  const std::string policy = name_at(value, "policy", field);
  s.policy = known(policies, policy, {source, field.name + ".policy"});
  s.nice = number_at<int>(value, "nice", field, 0);
  s.priority = number_at<unsigned>(value, "priority", field, 0);
  s.runtime = number_at<std::uint64_t>(value, "runtime", field, 0);
  s.deadline = number_at<std::uint64_t>(value, "deadline", field, 0);
  s.period = number_at<std::uint64_t>(value, "period", field, 0);
  if (auto it = value.find("flags"); it != value.end() && !it->is_null()) {
    const Field flags{source, field.name + ".flags"};
    if (!it->is_array()) throw flags.bad("must be an array of names");
    for (const auto& flag : *it) {
      if (!flag.is_string()) throw flags.bad("must be an array of names");
      s.flags |= known(flag_bits, flag.get<std::string>(), flags);
    }
  }
  if (s.nice < -20 || s.nice > 19) {
    throw Field{source, field.name + ".nice"}.bad(std::to_string(s.nice) + " is outside -20..19");
  }
  const bool real_time = policy == "SCHED_FIFO" || policy == "SCHED_RR";
  if (real_time && (s.priority < 1 || s.priority > 99)) {
    throw Field{source, field.name + ".priority"}.bad(
        std::to_string(s.priority) + " is outside 1..99, which " + policy + " needs");
  }
  if (!real_time && s.priority != 0) {
    throw Field{source, field.name + ".priority"}.bad("must be 0 for " + policy +
                                                      " (only SCHED_FIFO and SCHED_RR take one)");
  }
  if (policy != "SCHED_DEADLINE" && (s.runtime != 0 || s.deadline != 0 || s.period != 0)) {
    throw field.bad("runtime, deadline and period are for SCHED_DEADLINE only, not " + policy);
  }
  return s;
}

}  // namespace mrun::oci
