#include "security/seccomp_profile.hpp"

#include <sys/un.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace mrun::security {

namespace {

using nlohmann::json;

// Every error says which file and which key; the hint says what is accepted.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem,
                         const std::string& hint = {}) const {
    throw Error("seccomp profile " + origin_ + ": " + path + ": " + problem, EINVAL, hint);
  }

  const json* member(const json& object, const std::string& key) const {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::string string_at(const json& value, const std::string& path) const {
    if (!value.is_string()) fail(path, "expected a string, found " + type_of(value));
    return value.get<std::string>();
  }

  std::vector<std::string> strings_at(const json& value, const std::string& path) const {
    if (!value.is_array()) fail(path, "expected an array of strings, found " + type_of(value));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      out.push_back(string_at(value[i], path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  std::uint64_t u64_at(const json& value, const std::string& path) const {
    if (!value.is_number_integer() || (value.is_number_integer() && !value.is_number_unsigned() &&
                                       value.get<std::int64_t>() < 0)) {
      fail(path, "expected a non-negative integer, found " + type_of(value));
    }
    return value.get<std::uint64_t>();
  }

  static std::string type_of(const json& value) {
    if (value.is_number()) return "a number (" + value.dump() + ")";
    if (value.is_string()) return "a string (" + value.dump() + ")";
    return std::string(value.type_name() == std::string("array") ? "an " : "a ") +
           value.type_name();
  }

 private:
  std::string origin_;
};

// The runtime spec's actions (libseccomp's names); SCMP_ACT_KILL is libseccomp's
// SCMP_ACT_KILL_THREAD, as in runc.
constexpr std::pair<const char*, SeccompAction> action_names[] = {
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

constexpr std::pair<const char*, SeccompOp> op_names[] = {
    {"SCMP_CMP_NE", SeccompOp::ne},
    {"SCMP_CMP_LT", SeccompOp::lt},
    {"SCMP_CMP_LE", SeccompOp::le},
    {"SCMP_CMP_EQ", SeccompOp::eq},
    {"SCMP_CMP_GE", SeccompOp::ge},
    {"SCMP_CMP_GT", SeccompOp::gt},
    {"SCMP_CMP_MASKED_EQ", SeccompOp::masked_eq},
};

constexpr const char* flag_names[] = {
    "SECCOMP_FILTER_FLAG_TSYNC",
    "SECCOMP_FILTER_FLAG_LOG",
    "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
    "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

SeccompAction parse_action(const Reader& r, const json& value, const std::string& path) {
  std::string name = r.string_at(value, path);
  if (auto action = seccomp_action_from_name(name)) return *action;
  r.fail(path, "unknown action \"" + name + "\"", "one of " + joined(known_seccomp_actions()));
}

// The kernel carries a number back for these two only (SECCOMP_RET_DATA): the errno,
// or the value a tracer reads with PTRACE_GETEVENTMSG.
bool takes_errno(SeccompAction action) {
  return action == SeccompAction::errno_ret || action == SeccompAction::trace;
}

SeccompOp parse_op(const Reader& r, const json& value, const std::string& path) {
  std::string name = r.string_at(value, path);
  for (const auto& [text, op] : op_names) {
    if (name == text) return op;
  }
  r.fail(path, "unknown comparison \"" + name + "\"",
         "one of " + joined(known_seccomp_operators()));
}

// errnoRet (a number) wins; else errno (a name such as "EPERM"), as podman writes both.
std::optional<std::uint32_t> parse_errno(const Reader& r, const json& object,
                                         const std::string& path, const char* number_key,
                                         const char* name_key) {
  if (const json* v = r.member(object, number_key)) {
    std::uint64_t n = r.u64_at(*v, path + "." + number_key);
    if (n > 4095)
      r.fail(path + "." + number_key, "errno " + std::to_string(n) + " is out of range");
    return static_cast<std::uint32_t>(n);
  }
  if (const json* v = r.member(object, name_key)) {
    std::string name = r.string_at(*v, path + "." + name_key);
    auto n = errno_from_name(name);
    if (!n) r.fail(path + "." + name_key, "unknown errno name \"" + name + "\"", "such as EPERM");
    return n;
  }
  return std::nullopt;
}

SeccompFilterCondition parse_condition(const Reader& r, const json& value,
                                       const std::string& path) {
  if (!value.is_object()) r.fail(path, "expected an object, found " + Reader::type_of(value));
  SeccompFilterCondition c;
  if (const json* v = r.member(value, "arches")) c.arches = r.strings_at(*v, path + ".arches");
  if (const json* v = r.member(value, "caps")) c.caps = r.strings_at(*v, path + ".caps");
  if (const json* v = r.member(value, "minKernel")) {
    c.min_kernel = r.string_at(*v, path + ".minKernel");
    for (char ch : c.min_kernel) {
      if (!(std::isdigit(static_cast<unsigned char>(ch)) || ch == '.')) {
        r.fail(path + ".minKernel", "\"" + c.min_kernel + "\" is not a kernel version like 4.8");
      }
    }
  }
  return c;
}

SeccompRule parse_rule(const Reader& r, const json& value, const std::string& path) {
  if (!value.is_object()) r.fail(path, "expected an object, found " + Reader::type_of(value));
  SeccompRule rule;
  rule.where = path;
  if (const json* v = r.member(value, "names")) rule.names = r.strings_at(*v, path + ".names");
  if (const json* v = r.member(value, "name")) {  // Docker's older one-name form
    rule.names.push_back(r.string_at(*v, path + ".name"));
  }
  if (rule.names.empty()) r.fail(path, "no syscall names (\"names\": [...])");
  for (std::size_t i = 0; i < rule.names.size(); ++i) {
    if (rule.names[i].empty()) r.fail(path + ".names[" + std::to_string(i) + "]", "empty name");
  }
  const json* action = r.member(value, "action");
  if (action == nullptr) r.fail(path, "missing \"action\"");
  rule.action = parse_action(r, *action, path + ".action");
  rule.errno_ret = parse_errno(r, value, path, "errnoRet", "errno");
  if (rule.errno_ret && !takes_errno(rule.action)) {
    // The runtime spec: "When the action doesn't support an errno, the runtime MUST print
    // an error and fail."
    r.fail(path + (r.member(value, "errnoRet") ? ".errnoRet" : ".errno"),
           "an errno is only for SCMP_ACT_ERRNO and SCMP_ACT_TRACE, not " + to_string(rule.action),
           "drop it, or change the action");
  }
  if (const json* args = r.member(value, "args")) {
    if (!args->is_array())
      r.fail(path + ".args", "expected an array, found " + Reader::type_of(*args));
    for (std::size_t i = 0; i < args->size(); ++i) {
      std::string apath = path + ".args[" + std::to_string(i) + "]";
      const json& a = (*args)[i];
      if (!a.is_object()) r.fail(apath, "expected an object, found " + Reader::type_of(a));
      SeccompArg arg;
      const json* index = r.member(a, "index");
      const json* op = r.member(a, "op");
      if (index == nullptr) r.fail(apath, "missing \"index\"");
      if (op == nullptr) r.fail(apath, "missing \"op\"");
      std::uint64_t n = r.u64_at(*index, apath + ".index");
      if (n > 5)
        r.fail(apath + ".index", "syscalls have 6 arguments (0-5), not " + std::to_string(n + 1));
      arg.index = static_cast<unsigned>(n);
      if (const json* v = r.member(a, "value")) arg.value = r.u64_at(*v, apath + ".value");
      if (const json* v = r.member(a, "valueTwo"))
        arg.value_two = r.u64_at(*v, apath + ".valueTwo");
      arg.op = parse_op(r, *op, apath + ".op");
      rule.args.push_back(arg);
    }
  }
  if (const json* v = r.member(value, "includes"))
    rule.includes = parse_condition(r, *v, path + ".includes");
  if (const json* v = r.member(value, "excludes"))
    rule.excludes = parse_condition(r, *v, path + ".excludes");
  return rule;
}

// "line 3, column 7" for a byte offset (nlohmann reports bytes; people read lines).
std::string position_of(const std::string& text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

std::optional<std::uint32_t> errno_from_name(const std::string& name) {
  for (int e = 1; e < 4096; ++e) {
    const char* known = strerrorname_np(e);
    if (known != nullptr && name == known) return static_cast<std::uint32_t>(e);
  }
  return std::nullopt;
}

std::string to_string(SeccompAction action) {
  switch (action) {
    case SeccompAction::kill_thread: return "SCMP_ACT_KILL_THREAD";
    case SeccompAction::kill_process: return "SCMP_ACT_KILL_PROCESS";
    case SeccompAction::trap: return "SCMP_ACT_TRAP";
    case SeccompAction::errno_ret: return "SCMP_ACT_ERRNO";
    case SeccompAction::trace: return "SCMP_ACT_TRACE";
    case SeccompAction::allow: return "SCMP_ACT_ALLOW";
    case SeccompAction::log: return "SCMP_ACT_LOG";
    case SeccompAction::notify: return "SCMP_ACT_NOTIFY";
  }
  return "?";
}

std::vector<std::string> known_seccomp_actions() {
  std::vector<std::string> out;
  for (const auto& entry : action_names) out.emplace_back(entry.first);
  return out;
}

std::optional<SeccompAction> seccomp_action_from_name(const std::string& name) {
  for (const auto& [text, action] : action_names) {
    if (name == text) return action;
  }
  return std::nullopt;
}

std::vector<std::string> known_seccomp_operators() {
  std::vector<std::string> out;
  for (const auto& entry : op_names) out.emplace_back(entry.first);
  return out;
}

std::vector<std::string> known_seccomp_flags() {
  return {std::begin(flag_names), std::end(flag_names)};
}

SeccompProfile parse_seccomp_profile(const std::string& text, const std::string& origin) {
  Reader r(origin);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 7: ...";
    // keep the part after the position, say the position ourselves.
    std::string detail = e.what();
    auto colon = detail.find(": ", detail.find("parse error"));
    detail = colon == std::string::npos ? detail : detail.substr(colon + 2);
    throw Error("seccomp profile " + origin + ": " +
                    position_of(text, e.byte == 0 ? 0 : e.byte - 1) + ": invalid JSON: " + detail,
                EINVAL, "fix the JSON syntax (python3 -m json.tool FILE shows where)");
  } catch (const json::exception& e) {
    // A number too large for a double (1e999) is out_of_range, not parse_error, and
    // carries no position (tests/fuzz/regressions/seccomp/; the CDI fuzzer found it).
    throw Error("seccomp profile " + origin + ": invalid JSON: " + e.what(), EINVAL,
                "fix the JSON (python3 -m json.tool FILE shows it)");
  }
  if (!doc.is_object()) r.fail("(top level)", "expected an object, found " + Reader::type_of(doc));

  SeccompProfile profile;
  profile.origin = origin;
  const json* def = r.member(doc, "defaultAction");
  if (def == nullptr)
    r.fail("defaultAction", "missing", "e.g. \"defaultAction\": \"SCMP_ACT_ERRNO\"");
  profile.default_action = parse_action(r, *def, "defaultAction");
  profile.default_errno = parse_errno(r, doc, "(top level)", "defaultErrnoRet", "defaultErrno");
  if (profile.default_errno && !takes_errno(profile.default_action)) {
    r.fail(r.member(doc, "defaultErrnoRet") ? "defaultErrnoRet" : "defaultErrno",
           "an errno is only for SCMP_ACT_ERRNO and SCMP_ACT_TRACE, not " +
               to_string(profile.default_action),
           "drop it, or change defaultAction");
  }
  if (profile.default_action == SeccompAction::notify) {
    // Every syscall would wait for the agent, the ones that hand it the listener too
    // (runc refuses it for the same reason).
    r.fail("defaultAction", "SCMP_ACT_NOTIFY cannot be the default action",
           "give SCMP_ACT_NOTIFY to the syscalls the agent handles, in syscalls[]");
  }
  if (const json* v = r.member(doc, "architectures")) {
    profile.architectures = r.strings_at(*v, "architectures");
  }
  if (const json* v = r.member(doc, "archMap")) {
    if (!v->is_array()) r.fail("archMap", "expected an array, found " + Reader::type_of(*v));
    for (std::size_t i = 0; i < v->size(); ++i) {
      std::string path = "archMap[" + std::to_string(i) + "]";
      const json& entry = (*v)[i];
      if (!entry.is_object()) r.fail(path, "expected an object, found " + Reader::type_of(entry));
      SeccompArchMap map;
      const json* arch = r.member(entry, "architecture");
      if (arch == nullptr) r.fail(path, "missing \"architecture\"");
      map.architecture = r.string_at(*arch, path + ".architecture");
      if (const json* sub = r.member(entry, "subArchitectures")) {
        map.sub_architectures = r.strings_at(*sub, path + ".subArchitectures");
      }
      profile.arch_map.push_back(std::move(map));
    }
  }
  if (const json* v = r.member(doc, "flags")) {
    profile.flags = r.strings_at(*v, "flags");
    const auto known = known_seccomp_flags();
    for (std::size_t i = 0; i < profile.flags.size(); ++i) {
      if (std::find(known.begin(), known.end(), profile.flags[i]) == known.end()) {
        r.fail("flags[" + std::to_string(i) + "]", "unknown flag \"" + profile.flags[i] + "\"",
               "one of " + joined(known));
      }
    }
  }
  if (const json* v = r.member(doc, "listenerPath")) {
    profile.listener_path = r.string_at(*v, "listenerPath");
    // Resolved by the monitor, whose working directory is nobody's business: an engine
    // gives its agent's socket by absolute path.
    if (!profile.listener_path.empty() && profile.listener_path.front() != '/') {
      r.fail("listenerPath", "\"" + profile.listener_path + "\" is not an absolute path",
             "give the seccomp agent's unix socket as an absolute path");
    }
    if (profile.listener_path.size() >= sizeof(sockaddr_un::sun_path)) {
      r.fail("listenerPath",
             "\"" + profile.listener_path + "\" is longer than a unix socket address holds (" +
                 std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes)",
             "give the agent a socket at a shorter path");
    }
  }
  if (const json* v = r.member(doc, "listenerMetadata")) {
    profile.listener_metadata = r.string_at(*v, "listenerMetadata");
    if (!profile.listener_metadata.empty() && profile.listener_path.empty()) {
      r.fail("listenerMetadata", "set without listenerPath (the runtime spec forbids it)",
             "give listenerPath too, or drop listenerMetadata");
    }
  }
  if (const json* v = r.member(doc, "syscalls")) {
    if (!v->is_array()) r.fail("syscalls", "expected an array, found " + Reader::type_of(*v));
    for (std::size_t i = 0; i < v->size(); ++i) {
      profile.syscalls.push_back(parse_rule(r, (*v)[i], "syscalls[" + std::to_string(i) + "]"));
    }
  }
  for (const auto& rule : profile.syscalls) {
    if (rule.action != SeccompAction::notify) continue;
    if (profile.listener_path.empty()) {
      // runc: "seccomp listenerPath is not set". Without an agent every such syscall
      // would wait forever.
      r.fail(rule.where + ".action", "SCMP_ACT_NOTIFY, but listenerPath is not set",
             "set listenerPath to the unix socket of the seccomp agent that answers it");
    }
    for (std::size_t i = 0; i < rule.names.size(); ++i) {
      if (rule.names[i] == seccomp_notify_handover_syscall) {
        r.fail(rule.where + ".names[" + std::to_string(i) + "]",
               std::string("SCMP_ACT_NOTIFY cannot be used for ") +
                   seccomp_notify_handover_syscall +
                   ": mrun hands the listener to its agent with it",
               "allow it, or give it another action");
      }
    }
  }
  return profile;
}

bool allows_execve(const SeccompProfile& profile) {
  // A notified execve is the agent's to allow (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
  auto permits = [](SeccompAction a) {
    return a == SeccompAction::allow || a == SeccompAction::log || a == SeccompAction::notify;
  };
  if (permits(profile.default_action)) return true;
  for (const auto& rule : profile.syscalls) {
    if (!permits(rule.action)) continue;
    for (const auto& name : rule.names) {
      if (name == "execve" || name == "execveat") return true;
    }
  }
  return false;
}

}  // namespace mrun::security
