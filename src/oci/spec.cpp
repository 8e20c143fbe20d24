#include "oci/spec.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <type_traits>
#include <utility>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/device_rules.hpp"
#include "mount/mount_plan.hpp"
#include "sys/fs.hpp"

namespace mrun::oci {

using nlohmann::json;

namespace {

Error bad(const std::string& field, const std::string& what) {
  return Error("config.json: " + field + ": " + what, EINVAL);
}

template <typename T>
struct vector_of {
  using type = void;
};
template <typename U>
struct vector_of<std::vector<U>> {
  using type = U;
};

// An integer field must hold an integer that fits: nlohmann converts any number to
// any arithmetic type with a plain cast, so 4294967296 would be uid 0, a gid of -1
// 4294967295 and a timeout of 1.5 one second (tests/fuzz/regressions/config/).
// Anything but a number is left to get<T>() to report as a wrong type.
template <typename T>
void check_integer(const json& v, const std::string& field) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (std::is_unsigned_v<T>) {
      // nlohmann would wrap -1 round to 4294967295: a uid that nobody asked for.
      if (!v.is_number_unsigned()) throw bad(field, "must be a non-negative integer");
    }
    if (!v.is_number()) return;
    if (!v.is_number_integer()) throw bad(field, "must be an integer, not " + v.dump());
    bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
                                       : std::in_range<T>(v.get<std::int64_t>());
    if (!fits) throw bad(field, v.dump() + " is out of range");
  }
}

// Reads j[key] into out when present; a wrong type names the field.
template <typename T>
void get(const json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  check_integer<T>(*it, where + key);
  if constexpr (!std::is_void_v<typename vector_of<T>::type>) {
    if (it->is_array()) {
      for (std::size_t i = 0; i < it->size(); ++i) {
        check_integer<typename vector_of<T>::type>((*it)[i],
                                                   where + key + "[" + std::to_string(i) + "]");
      }
    }
  }
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    throw bad(where + key, "wrong type (" + std::string(it->type_name()) + ")");
  }
}
template <typename T>
void get(const json& j, const char* key, std::optional<T>& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  T value{};
  get(j, key, value, where);
  out = std::move(value);
}

const json& object_at(const json& j, const std::string& where) {
  if (!j.is_object()) throw bad(where, "must be an object");
  return j;
}

// The keys of `j` not in `known`: kept so that a round trip loses nothing.
json rest(const json& j, std::initializer_list<const char*> known) {
  json out = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      out[it.key()] = it.value();
    }
  }
  return out;
}

template <typename T>
void put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

Process parse_process(const json& j) {
  object_at(j, "process");
  Process p;
  get(j, "terminal", p.terminal, "process.");
  if (auto it = j.find("user"); it != j.end()) {
    object_at(*it, "process.user");
    get(*it, "uid", p.user.uid, "process.user.");
    get(*it, "gid", p.user.gid, "process.user.");
    get(*it, "umask", p.user.umask, "process.user.");
    get(*it, "additionalGids", p.user.additional_gids, "process.user.");
    get(*it, "username", p.user.username, "process.user.");
  }
  get(j, "args", p.args, "process.");
  get(j, "env", p.env, "process.");
  get(j, "cwd", p.cwd, "process.");
  if (auto it = j.find("capabilities"); it != j.end() && !it->is_null()) {
    object_at(*it, "process.capabilities");
    Capabilities c;
    get(*it, "bounding", c.bounding, "process.capabilities.");
    get(*it, "effective", c.effective, "process.capabilities.");
    get(*it, "inheritable", c.inheritable, "process.capabilities.");
    get(*it, "permitted", c.permitted, "process.capabilities.");
    get(*it, "ambient", c.ambient, "process.capabilities.");
    p.capabilities = c;
  }
  if (auto it = j.find("rlimits"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw bad("process.rlimits", "must be an array");
    for (const auto& r : *it) {
      Rlimit limit;
      get(r, "type", limit.type, "process.rlimits[].");
      get(r, "hard", limit.hard, "process.rlimits[].");
      get(r, "soft", limit.soft, "process.rlimits[].");
      p.rlimits.push_back(limit);
    }
  }
  get(j, "noNewPrivileges", p.no_new_privileges, "process.");
  get(j, "apparmorProfile", p.apparmor_profile, "process.");
  get(j, "selinuxLabel", p.selinux_label, "process.");
  get(j, "oomScoreAdj", p.oom_score_adj, "process.");
  p.extra = rest(j, {"terminal", "user", "args", "env", "cwd", "capabilities", "rlimits",
                     "noNewPrivileges", "apparmorProfile", "selinuxLabel", "oomScoreAdj"});
  return p;
}

json process_json(const Process& p) {
  json j = p.extra;
  put(j, "terminal", p.terminal);
  json user = {{"uid", p.user.uid}, {"gid", p.user.gid}};
  put(user, "umask", p.user.umask);
  if (!p.user.additional_gids.empty()) user["additionalGids"] = p.user.additional_gids;
  put(user, "username", p.user.username);
  j["user"] = user;
  j["args"] = p.args;
  if (!p.env.empty()) j["env"] = p.env;
  j["cwd"] = p.cwd;
  if (p.capabilities) {
    json c = json::object();
    put(c, "bounding", p.capabilities->bounding);
    put(c, "effective", p.capabilities->effective);
    put(c, "inheritable", p.capabilities->inheritable);
    put(c, "permitted", p.capabilities->permitted);
    put(c, "ambient", p.capabilities->ambient);
    j["capabilities"] = c;
  }
  if (!p.rlimits.empty()) {
    json limits = json::array();
    for (const auto& r : p.rlimits) {
      limits.push_back({{"type", r.type}, {"hard", r.hard}, {"soft", r.soft}});
    }
    j["rlimits"] = limits;
  }
  put(j, "noNewPrivileges", p.no_new_privileges);
  put(j, "apparmorProfile", p.apparmor_profile);
  put(j, "selinuxLabel", p.selinux_label);
  put(j, "oomScoreAdj", p.oom_score_adj);
  return j;
}

Hook parse_hook(const json& j, const std::string& where) {
  object_at(j, where);
  Hook h;
  get(j, "path", h.path, where + ".");
  get(j, "args", h.args, where + ".");
  get(j, "env", h.env, where + ".");
  get(j, "timeout", h.timeout, where + ".");
  return h;
}

json hook_json(const Hook& h) {
  json j = {{"path", h.path}};
  if (!h.args.empty()) j["args"] = h.args;
  if (!h.env.empty()) j["env"] = h.env;
  put(j, "timeout", h.timeout);
  return j;
}

Linux parse_linux(const json& j) {
  object_at(j, "linux");
  Linux l;
  if (auto it = j.find("namespaces"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw bad("linux.namespaces", "must be an array");
    for (const auto& n : *it) {
      Namespace ns;
      get(n, "type", ns.type, "linux.namespaces[].");
      get(n, "path", ns.path, "linux.namespaces[].");
      l.namespaces.push_back(ns);
    }
  }
  auto mappings = [&](const char* key, std::optional<std::vector<IdMapping>>& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_array()) throw bad(std::string("linux.") + key, "must be an array");
    out.emplace();
    for (const auto& m : *it) {
      IdMapping map;
      std::string where = std::string("linux.") + key + "[].";
      get(m, "containerID", map.container_id, where);
      get(m, "hostID", map.host_id, where);
      get(m, "size", map.size, where);
      out->push_back(map);
    }
  };
  mappings("uidMappings", l.uid_mappings);
  mappings("gidMappings", l.gid_mappings);
  get(j, "devices", l.devices, "linux.");
  get(j, "resources", l.resources, "linux.");
  get(j, "cgroupsPath", l.cgroups_path, "linux.");
  get(j, "seccomp", l.seccomp, "linux.");
  get(j, "maskedPaths", l.masked_paths, "linux.");
  get(j, "readonlyPaths", l.readonly_paths, "linux.");
  get(j, "sysctl", l.sysctl, "linux.");
  get(j, "rootfsPropagation", l.rootfs_propagation, "linux.");
  l.extra =
      rest(j, {"namespaces", "uidMappings", "gidMappings", "devices", "resources", "cgroupsPath",
               "seccomp", "maskedPaths", "readonlyPaths", "sysctl", "rootfsPropagation"});
  return l;
}

json linux_json(const Linux& l) {
  json j = l.extra;
  auto mappings = [&](const char* key, const std::optional<std::vector<IdMapping>>& maps) {
    if (!maps) return;
    json out = json::array();
    for (const auto& m : *maps) {
      out.push_back({{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}});
    }
    j[key] = out;
  };
  mappings("uidMappings", l.uid_mappings);
  mappings("gidMappings", l.gid_mappings);
  put(j, "devices", l.devices);
  put(j, "resources", l.resources);
  put(j, "cgroupsPath", l.cgroups_path);
  put(j, "seccomp", l.seccomp);
  if (!l.namespaces.empty()) {
    json out = json::array();
    for (const auto& n : l.namespaces) {
      json ns = {{"type", n.type}};
      put(ns, "path", n.path);
      out.push_back(ns);
    }
    j["namespaces"] = out;
  }
  put(j, "maskedPaths", l.masked_paths);
  put(j, "readonlyPaths", l.readonly_paths);
  put(j, "sysctl", l.sysctl);
  put(j, "rootfsPropagation", l.rootfs_propagation);
  return j;
}

const std::vector<std::string> hook_stages = {"prestart",       "createRuntime", "createContainer",
                                              "startContainer", "poststart",     "poststop"};

bool absolute(const std::string& path) {
  return !path.empty() && path[0] == '/';
}

}  // namespace

Spec parse_spec(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double (1e999) is out_of_range
    // (tests/fuzz/regressions/config/), and must not escape as a foreign exception.
    throw Error("config.json: malformed JSON: " + std::string(e.what()), EINVAL);
  }
  if (!j.is_object()) throw bad("(top level)", "must be an object");
  Spec s;
  get(j, "ociVersion", s.oci_version, "");
  if (auto it = j.find("process"); it != j.end() && !it->is_null()) s.process = parse_process(*it);
  if (auto it = j.find("root"); it != j.end() && !it->is_null()) {
    object_at(*it, "root");
    Root r;
    get(*it, "path", r.path, "root.");
    get(*it, "readonly", r.readonly, "root.");
    s.root = r;
  }
  if (auto it = j.find("mounts"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw bad("mounts", "must be an array");
    s.mounts.emplace();
    for (const auto& m : *it) {
      object_at(m, "mounts[]");
      Mount mount;
      get(m, "destination", mount.destination, "mounts[].");
      get(m, "type", mount.type, "mounts[].");
      get(m, "source", mount.source, "mounts[].");
      get(m, "options", mount.options, "mounts[].");
      s.mounts->push_back(mount);
    }
  }
  get(j, "hostname", s.hostname, "");
  get(j, "domainname", s.domainname, "");
  if (auto it = j.find("hooks"); it != j.end() && !it->is_null()) {
    object_at(*it, "hooks");
    Hooks hooks;
    for (const auto& stage : hook_stages) {
      auto list = it->find(stage);
      if (list == it->end() || list->is_null()) continue;
      if (!list->is_array()) throw bad("hooks." + stage, "must be an array");
      auto& out = hooks.by_stage[stage];
      for (const auto& h : *list) out.push_back(parse_hook(h, "hooks." + stage + "[]"));
    }
    s.hooks = hooks;
  }
  get(j, "annotations", s.annotations, "");
  if (auto it = j.find("linux"); it != j.end() && !it->is_null()) s.linux = parse_linux(*it);
  s.extra = rest(j, {"ociVersion", "process", "root", "mounts", "hostname", "domainname", "hooks",
                     "annotations", "linux"});
  return s;
}

json to_json(const Spec& s) {
  json j = s.extra;
  j["ociVersion"] = s.oci_version;
  if (s.process) j["process"] = process_json(*s.process);
  if (s.root) {
    json root = {{"path", s.root->path}};
    put(root, "readonly", s.root->readonly);
    j["root"] = root;
  }
  put(j, "hostname", s.hostname);
  put(j, "domainname", s.domainname);
  if (s.mounts) {
    json mounts = json::array();
    for (const auto& m : *s.mounts) {
      json mount = {{"destination", m.destination}};
      put(mount, "type", m.type);
      put(mount, "source", m.source);
      if (!m.options.empty()) mount["options"] = m.options;
      mounts.push_back(mount);
    }
    j["mounts"] = mounts;
  }
  if (s.hooks) {
    json hooks = json::object();
    for (const auto& [stage, list] : s.hooks->by_stage) {
      json out = json::array();
      for (const auto& h : list) out.push_back(hook_json(h));
      hooks[stage] = out;
    }
    j["hooks"] = hooks;
  }
  put(j, "annotations", s.annotations);
  if (s.linux) j["linux"] = linux_json(*s.linux);
  return j;
}

void validate(const Spec& s) {
  if (s.oci_version.empty()) throw bad("ociVersion", "missing");
  if (!starts_with(s.oci_version, "1.")) {
    throw Error("config.json: unsupported ociVersion \"" + s.oci_version +
                    "\": mrun implements runtime-spec 1.x",
                EINVAL);
  }
  if (!s.root || s.root->path.empty()) throw bad("root.path", "root must be specified");
  if (s.process) {
    if (s.process->args.empty()) throw bad("process.args", "args must not be empty");
    if (s.process->cwd.empty()) throw bad("process.cwd", "cwd property must not be empty");
    if (!absolute(s.process->cwd)) {
      throw bad("process.cwd", "cwd \"" + s.process->cwd + "\" must be an absolute path");
    }
    for (const auto& e : s.process->env) {
      if (e.find('=') == std::string::npos)
        throw bad("process.env", "\"" + e + "\" is not KEY=VALUE");
    }
  }
  if (s.mounts) {
    for (const auto& m : *s.mounts) {
      if (!absolute(m.destination)) {
        throw bad("mounts", "destination \"" + m.destination + "\" must be an absolute path");
      }
    }
  }
  if (s.hooks) {
    for (const auto& [stage, list] : s.hooks->by_stage) {
      for (const auto& h : list) {
        if (!absolute(h.path)) {
          throw bad("hooks." + stage, "path \"" + h.path + "\" must be an absolute path");
        }
      }
    }
  }
  if (s.linux) {
    static const std::set<std::string> types{"pid", "network", "mount",  "ipc",
                                             "uts", "user",    "cgroup", "time"};
    std::set<std::string> seen;
    for (const auto& n : s.linux->namespaces) {
      if (!types.count(n.type))
        throw bad("linux.namespaces", "unknown namespace type \"" + n.type + "\"");
      if (!seen.insert(n.type).second) {
        throw bad("linux.namespaces", "duplicate namespace type \"" + n.type + "\"");
      }
      if (n.path && !absolute(*n.path)) {
        throw bad("linux.namespaces", "path \"" + *n.path + "\" must be an absolute path");
      }
    }
    if ((s.linux->uid_mappings || s.linux->gid_mappings) && !seen.count("user")) {
      throw bad("linux.uidMappings", "user namespace mappings without a user namespace");
    }
    auto check_paths = [](const std::optional<std::vector<std::string>>& paths, const char* field) {
      if (!paths) return;
      for (const auto& p : *paths) {
        if (!absolute(p)) throw bad(field, "\"" + p + "\" must be an absolute path");
      }
    };
    check_paths(s.linux->masked_paths, "linux.maskedPaths");
    check_paths(s.linux->readonly_paths, "linux.readonlyPaths");
  }
}

Spec default_spec(bool rootless, std::uint32_t uid, std::uint32_t gid) {
  // The same document as `runc spec` (runc 1.1), so engines and people find what they
  // expect; `mrun spec --rootless` follows runc's rootless changes.
  const std::vector<std::string> caps{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  Spec s;
  s.oci_version = spec_version;
  Process p;
  p.terminal = true;
  p.args = {"sh"};
  p.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"};
  p.cwd = "/";
  p.capabilities = Capabilities{caps, caps, std::nullopt, caps, caps};
  p.rlimits = {{"RLIMIT_NOFILE", 1024, 1024}};
  p.no_new_privileges = true;
  s.process = p;
  s.root = Root{"rootfs", true};
  s.hostname = "mrun";
  auto m = [](std::string dst, std::string type, std::string src, std::vector<std::string> opts) {
    return Mount{std::move(dst), std::move(type), std::move(src), std::move(opts)};
  };
  s.mounts = std::vector<Mount>{
      m("/proc", "proc", "proc", {}),
      m("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      m("/dev/pts", "devpts", "devpts",
        {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
      m("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}),
      m("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}),
      m("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}),
      m("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}),
  };
  Linux l;
  l.resources = json{{"devices", json::array({{{"allow", false}, {"access", "rwm"}}})}};
  l.namespaces = {{"pid", {}}, {"network", {}}, {"ipc", {}}, {"uts", {}}, {"mount", {}}};
  l.masked_paths = std::vector<std::string>{
      "/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
      "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
      "/sys/firmware",       "/proc/scsi"};
  l.readonly_paths = std::vector<std::string>{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                              "/proc/sysrq-trigger"};
  if (rootless) {
    // As runc spec --rootless: no network namespace, a user namespace with the caller
    // as root, /sys bound from the host (sysfs cannot be mounted without a netns),
    // no resources (no cgroup delegation assumed), no gid=5 on devpts.
    l.resources.reset();
    l.namespaces = {{"pid", {}}, {"ipc", {}}, {"uts", {}}, {"mount", {}}, {"user", {}}};
    l.uid_mappings = std::vector<IdMapping>{{0, uid, 1}};
    l.gid_mappings = std::vector<IdMapping>{{0, gid, 1}};
    for (auto& mount : *s.mounts) {
      if (mount.destination == "/sys") {
        mount = m("/sys", "none", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"});
      }
      if (mount.destination == "/dev/pts") {
        mount.options = {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"};
      }
    }
  }
  s.linux = l;
  return s;
}

Spec load_bundle(const std::string& bundle) {
  if (!sys::is_dir(bundle)) {
    throw Error("bundle " + bundle + ": no such directory", ENOENT,
                "give the directory holding config.json with --bundle");
  }
  auto text = sys::read_file(bundle + "/config.json");
  if (!text) {
    throw Error("JSON specification file config.json not found in " + bundle, ENOENT,
                "create one with `mrun spec`");
  }
  Spec spec = parse_spec(*text);
  validate(spec);
  return spec;
}

namespace {

Error unsupported(const std::string& field, const std::string& why) {
  return Error("config.json: " + field + ": " + why, ENOTSUP,
               "mrun does not honour this yet; remove it from config.json");
}

bool same_set(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return a == b;
}

bool has_option(const Mount& m, const std::string& option) {
  return std::find(m.options.begin(), m.options.end(), option) != m.options.end();
}

// The kernel filesystems mrun mounts itself, always (mount_plan.cpp): accepted as
// they are what mrun provides (see mrun-oci(1)).
bool provided_by_mrun(const Mount& m) {
  static const std::map<std::string, std::set<std::string>> provided{
      {"/proc", {"proc"}},
      {"/dev", {"tmpfs"}},
      {"/dev/pts", {"devpts"}},
      {"/dev/shm", {"tmpfs"}},
      {"/dev/mqueue", {"mqueue"}},
      {"/sys", {"sysfs", "none", "bind"}},
      {"/sys/fs/cgroup", {"cgroup", "cgroup2"}},
  };
  auto it = provided.find(m.destination);
  return it != provided.end() && it->second.count(m.type.value_or(""));
}

void convert_mounts(const Spec& spec, const std::string& bundle, runtime::ContainerConfig& c,
                    const Logger& log) {
  if (!spec.mounts) return;
  for (const auto& m : *spec.mounts) {
    if (provided_by_mrun(m)) {
      log.debug("oci: " + m.destination + " (" + m.type.value_or("") + "): mrun's own mount");
      continue;
    }
    bool bind = m.type.value_or("") == "bind" || has_option(m, "bind") || has_option(m, "rbind");
    if (!bind) {
      throw unsupported("mounts (" + m.type.value_or("") + " on " + m.destination + ")",
                        "only bind mounts are supported");
    }
    static const std::set<std::string> known{"bind",  "rbind",  "ro",      "rw",      "nosuid",
                                             "nodev", "noexec", "private", "rprivate"};
    for (const auto& option : m.options) {
      if (!known.count(option)) {
        throw unsupported("mounts (" + m.destination + ")", "option \"" + option + "\"");
      }
    }
    std::string source = m.source.value_or("");
    if (source.empty()) throw bad("mounts (" + m.destination + ")", "bind mount without a source");
    if (source[0] != '/') source = bundle + "/" + source;
    c.volumes.push_back({source, m.destination, has_option(m, "ro")});
  }
}

void convert_namespaces(const Linux& l, std::uint32_t uid, std::uint32_t gid,
                        runtime::ContainerConfig& c, const Logger& log) {
  std::set<std::string> types;
  for (const auto& n : l.namespaces) {
    if (n.path)
      throw unsupported("linux.namespaces (" + n.type + ")", "joining a namespace by path");
    types.insert(n.type);
  }
  for (const char* required : {"pid", "mount", "ipc", "uts"}) {
    if (!types.count(required)) {
      throw unsupported("linux.namespaces",
                        std::string("sharing the host's ") + required + " namespace");
    }
  }
  if (types.count("time")) throw unsupported("linux.namespaces (time)", "time namespaces");
  c.network = types.count("network") ? runtime::NetworkMode::none : runtime::NetworkMode::host;
  // user and cgroup: mrun always unshares a cgroup namespace, and a user namespace
  // whenever its privilege model needs one (always rootless); say so, never hide it.
  if (!types.count("cgroup")) log.debug("oci: mrun gives the container a cgroup namespace anyway");
  if (!types.count("user")) log.debug("oci: no user namespace asked for; rootless mrun makes one");
  // mrun plans the maps itself: container root is the caller, plus /etc/subuid. A map
  // that says otherwise cannot be honoured yet.
  auto check = [](const std::optional<std::vector<IdMapping>>& maps, std::uint32_t id,
                  const char* field) {
    if (!maps) return;
    for (const auto& m : *maps) {
      bool root_is_caller = m.container_id == 0 && m.host_id == id && m.size == 1;
      if (!root_is_caller) {
        throw unsupported(field, "mrun maps container root to your id (" + std::to_string(id) +
                                     ") and /etc/subuid ranges itself; other maps are not "
                                     "supported yet");
      }
    }
  };
  check(l.uid_mappings, uid, "linux.uidMappings");
  check(l.gid_mappings, gid, "linux.gidMappings");
}

// linux.devices carry no host path: as runc and crun do, the host node at the same
// path is the one meant (engines such as podman resolve --device and CDI names to such
// entries). mrun then mknods (rootful) or binds (rootless) it, with the host's numbers,
// which must agree with the entry's.
void convert_devices(const json& devices, runtime::ContainerConfig& c) {
  if (!devices.is_array()) throw bad("linux.devices", "must be an array");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& d = devices[i];
    std::string field = "linux.devices[" + std::to_string(i) + "]";
    if (!d.is_object() || !d.contains("path") || !d["path"].is_string()) {
      throw bad(field, "needs a path");
    }
    std::string path = d["path"].get<std::string>();
    // get(), not json::value(), which throws nlohmann's type_error for a type that is
    // not a string (the mistake tests/fuzz/fuzz_config.cpp caught in resources.devices;
    // linux.devices is not fuzzed, as this conversion stat()s the host node).
    std::string type = "c";
    get(d, "type", type, field + ".");
    if (type != "c") {
      throw unsupported(field + " (" + path + ")", "only character devices");
    }
    const auto& defaults = mount::default_device_nodes();
    if (std::find(defaults.begin(), defaults.end(), path.substr(path.rfind('/') + 1)) !=
            defaults.end() &&
        path.rfind('/') == 4 && starts_with(path, "/dev/")) {
      continue;  // one of the nodes mrun always provides (podman lists them too)
    }
    auto host = mount::inspect_device(mount::parse_device(path));
    auto number = [&](const char* key) -> std::int64_t {
      return d.contains(key) && d[key].is_number_integer() ? d[key].get<std::int64_t>() : -1;
    };
    if ((number("major") >= 0 && number("major") != static_cast<std::int64_t>(host.major)) ||
        (number("minor") >= 0 && number("minor") != static_cast<std::int64_t>(host.minor))) {
      throw unsupported(field + " (" + path + ")",
                        "its major:minor differ from the host node at that path");
    }
    c.devices.push_back(host.spec);
  }
}

void convert_resources(const json& r, runtime::ContainerConfig& c) {
  for (auto it = r.begin(); it != r.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "devices") {
      // The device cgroup filter's extra allow rules (cgroup/device_rules.hpp); the
      // usual leading deny-all is mrun's starting point anyway. Each field through
      // get(): json::value() threw nlohmann's own type_error for a rule that is not an
      // object or a field of another type (tests/fuzz/regressions/config/).
      if (!v.is_array()) throw bad("linux.resources.devices", "must be an array");
      std::vector<cgroup::OciDeviceRule> entries;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const json& rule = v[i];
        const std::string field = "linux.resources.devices[" + std::to_string(i) + "]";
        object_at(rule, field);
        cgroup::OciDeviceRule e;
        get(rule, "allow", e.allow, field + ".");
        get(rule, "type", e.type, field + ".");
        get(rule, "major", e.major, field + ".");
        get(rule, "minor", e.minor, field + ".");
        get(rule, "access", e.access, field + ".");
        entries.push_back(e);
      }
      c.device_rules = cgroup::rules_from_oci(entries);
    } else if (key == "memory" && v.is_object()) {
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (m.key() == "limit" && m.value().is_number_integer() &&
            m.value().get<std::int64_t>() > 0) {
          c.limits.memory = m.value().get<std::uint64_t>();
        } else if (m.key() == "swap" && m.value().is_number_integer()) {
          c.limits.memory_swap = m.value().get<std::int64_t>();
        } else {
          throw unsupported("linux.resources.memory." + m.key(), "not supported yet");
        }
      }
    } else if (key == "pids" && v.is_object() && v.size() == 1 && v.contains("limit") &&
               v["limit"].is_number_integer()) {
      if (v["limit"].get<std::int64_t>() > 0) c.limits.pids = v["limit"].get<std::uint64_t>();
    } else if (key == "cpu" && v.is_object()) {
      // get(), not json::value(): a string threw nlohmann's type_error and a negative
      // period wrapped round to 2^64-1 (tests/fuzz/regressions/config/).
      std::int64_t quota = 0;
      std::uint64_t period = 100000;
      get(v, "quota", quota, "linux.resources.cpu.");
      get(v, "period", period, "linux.resources.cpu.");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (m.key() != "quota" && m.key() != "period") {
          throw unsupported("linux.resources.cpu." + m.key(), "not supported yet");
        }
      }
      if (quota > 0 && period > 0) c.limits.cpus = double(quota) / double(period);
    } else {
      throw unsupported("linux.resources." + key, "not supported yet");
    }
  }
}

// OCI lists every capability set explicitly; mrun's options are "drop all, add these".
// Only the common shape (bounding = effective = permitted, no extra inheritable or
// ambient) maps onto that exactly.
void convert_capabilities(const Capabilities& caps, security::SecurityOptions& security) {
  auto bounding = caps.bounding.value_or(std::vector<std::string>{});
  auto same = [&](const std::optional<std::vector<std::string>>& set) {
    return !set || set->empty() || same_set(*set, bounding);
  };
  if (!caps.effective || !same(caps.effective) || !same(caps.permitted)) {
    throw unsupported("process.capabilities",
                      "effective and permitted sets that differ from the bounding set");
  }
  if (!same(caps.inheritable) || !same(caps.ambient)) {
    throw unsupported("process.capabilities", "inheritable or ambient sets of their own");
  }
  security.cap_drop = {"ALL"};
  security.cap_add = bounding;
}

}  // namespace

void convert_process_security(const Process& p, security::SecurityOptions& security) {
  security.no_new_privileges = p.no_new_privileges.value_or(false);
  if (p.capabilities) {
    convert_capabilities(*p.capabilities, security);
  } else {
    security.cap_drop = {"ALL"};
  }
}

Process parse_process_text(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw Error(std::string("process.json: malformed JSON: ") + e.what(), EINVAL);
  }
  Process p;
  try {
    p = parse_process(j);
  } catch (const Error& e) {
    throw Error(std::string(e.what_failed()).replace(0, 11, "process.json"), EINVAL);
  }
  if (p.args.empty()) throw Error("process.json: args must not be empty", EINVAL);
  if (!p.cwd.empty() && p.cwd[0] != '/') {
    throw Error("process.json: cwd \"" + p.cwd + "\" must be an absolute path", EINVAL);
  }
  return p;
}

std::string cgroup_parent_from_path(const std::string& path) {
  auto parts = split(path, ':');
  if (parts.size() == 3 && path[0] != '/') {
    // systemd's "slice:prefix:name": the slice's directory, "a-b.slice" living in
    // a.slice/a-b.slice as systemd nests them; "" and "-.slice" are the root.
    const std::string& slice = parts[0];
    if (slice.empty() || slice == "-.slice") return {};
    std::string base = slice.substr(0, slice.size() - (slice.ends_with(".slice") ? 6 : 0));
    std::string dir;
    std::string prefix;
    for (const auto& piece : split(base, '-')) {
      prefix += (prefix.empty() ? "" : "-") + piece;
      dir += (dir.empty() ? "" : "/") + prefix + ".slice";
    }
    return dir;
  }
  // cgroupfs: the directory the named cgroup would be in, relative to the root.
  std::string p = path;
  while (!p.empty() && p.front() == '/') p.erase(0, 1);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

runtime::ContainerConfig to_container_config(const Spec& spec, const std::string& bundle,
                                             const std::string& id, std::uint32_t uid,
                                             std::uint32_t gid, const std::string& scratch_dir,
                                             const Logger& log) {
  runtime::ContainerConfig c;
  c.name = id;
  c.bundle = bundle;
  if (spec.annotations) c.annotations = *spec.annotations;
  if (!spec.process) throw unsupported("process", "a container without a process");
  const Process& p = *spec.process;
  c.args = p.args;
  // A name given twice: the later value wins, as in runc and crun (podman 4.3 appends
  // a CDI spec's PATH after the image's instead of replacing it).
  for (const auto& entry : p.env) {
    std::string key = entry.substr(0, entry.find('='));
    std::erase_if(c.env, [&](const std::string& e) { return starts_with(e, key + "="); });
    c.env.push_back(entry);
  }
  c.workdir = p.cwd;
  c.user = {p.user.uid, p.user.gid};
  c.tty = p.terminal.value_or(false);
  if (!p.user.additional_gids.empty()) {
    throw unsupported("process.user.additionalGids", "supplementary groups");
  }
  if (p.user.umask) {
    if (*p.user.umask > 0777) throw bad("process.user.umask", "must be at most 0777");
    c.umask = static_cast<mode_t>(*p.user.umask);
  }
  if (p.oom_score_adj) throw unsupported("process.oomScoreAdj", "an OOM score adjustment");
  if (p.apparmor_profile) log.debug("oci: process.apparmorProfile: unsupported, not applied");
  if (p.selinux_label) log.debug("oci: process.selinuxLabel: unsupported, not applied");
  for (const auto& r : p.rlimits) log.debug("oci: rlimit " + r.type + " applied before clone");
  // The spec's defaults, not mrun run's: no capability set means none, no
  // noNewPrivileges means false, no linux.seccomp means no filter.
  convert_process_security(p, c.security);

  c.rootfs = spec.root->path[0] == '/' ? spec.root->path : bundle + "/" + spec.root->path;
  c.read_only = spec.root->readonly.value_or(false);
  c.hostname = spec.hostname.value_or("");
  if (spec.domainname && !spec.domainname->empty())
    throw unsupported("domainname", "a NIS domain name");
  convert_mounts(spec, bundle, c, log);
  if (spec.hooks) {
    for (const auto& [stage, list] : spec.hooks->by_stage) {
      auto& out = runtime::hooks_of(c.hooks, stage);  // stage names checked by parse_spec
      for (const auto& h : list) out.push_back({h.path, h.args, h.env, h.timeout});
    }
  }
  if (spec.annotations) {
    auto it = spec.annotations->find("run.oci.keep_original_groups");
    c.keep_groups = it != spec.annotations->end() && it->second == "1";
  }

  if (!spec.linux) throw unsupported("linux", "a config without a linux section");
  const Linux& l = *spec.linux;
  for (auto it = l.extra.begin(); it != l.extra.end(); ++it) {
    static const std::set<std::string> spec_fields{"mountLabel", "intelRdt", "personality",
                                                   "timeOffsets", "memoryPolicy"};
    if (spec_fields.count(it.key())) throw unsupported("linux." + it.key(), "not supported yet");
  }
  convert_namespaces(l, uid, gid, c, log);
  if (l.devices) convert_devices(*l.devices, c);
  if (l.resources) convert_resources(*l.resources, c);
  if (l.cgroups_path && !l.cgroups_path->empty()) {
    // Rootless, mrun's leaf goes where it can move the container: its delegated subtree.
    if (uid == 0) {
      c.cgroup_parent = cgroup_parent_from_path(*l.cgroups_path);
      log.debug("oci: linux.cgroupsPath " + *l.cgroups_path + ": leaf mrun-" + id + " under " +
                (c.cgroup_parent.empty() ? "the default parent" : c.cgroup_parent));
    } else {
      log.debug("oci: linux.cgroupsPath " + *l.cgroups_path + " not used rootless");
    }
  }
  if (l.sysctl) {
    // Only what the container's own namespaces scope (runc's rule): anything else
    // would change the host.
    for (const auto& [key, value] : *l.sysctl) {
      bool ipc = starts_with(key, "kernel.shm") || starts_with(key, "kernel.msg") ||
                 key == "kernel.sem" || starts_with(key, "fs.mqueue.");
      bool net = starts_with(key, "net.") && c.network != runtime::NetworkMode::host;
      if ((!ipc && !net) || key.find('/') != std::string::npos ||
          key.find("..") != std::string::npos) {
        throw unsupported("linux.sysctl (" + key + ")",
                          "not a sysctl of the container's own network or IPC namespace");
      }
      c.sysctl[key] = value;
    }
  }
  if (l.rootfs_propagation && *l.rootfs_propagation != "private" &&
      *l.rootfs_propagation != "rprivate") {
    throw unsupported("linux.rootfsPropagation",
                      "\"" + *l.rootfs_propagation + "\" (mrun makes the rootfs rprivate)");
  }
  // mrun masks and write-protects fixed lists (mount_plan.cpp); a path outside both
  // cannot be honoured yet. One of runc's masked paths (/proc/asound) is read-only in
  // mrun's lists: said under --debug.
  auto within = [&log](const std::optional<std::vector<std::string>>& asked,
                       const std::vector<std::string>& same, const std::vector<std::string>& other,
                       const char* field) {
    if (!asked) return;
    auto has = [](const std::vector<std::string>& v, const std::string& item) {
      return std::find(v.begin(), v.end(), item) != v.end();
    };
    for (const auto& path : *asked) {
      if (has(same, path)) continue;
      if (!has(other, path)) {
        throw unsupported(field, "\"" + path + "\" is not in mrun's built-in lists");
      }
      log.debug(std::string("oci: ") + field + " " + path + ": mrun's built-in list treats it as " +
                (has(mount::default_masked_paths(), path) ? "masked" : "read-only"));
    }
  };
  within(l.masked_paths, mount::default_masked_paths(), mount::default_read_only_paths(),
         "linux.maskedPaths");
  within(l.readonly_paths, mount::default_read_only_paths(), mount::default_masked_paths(),
         "linux.readonlyPaths");
  if (l.seccomp) {
    sys::make_dirs(scratch_dir, 0700);
    std::string path = scratch_dir + "/" + id + ".seccomp.json";
    std::ofstream out(path, std::ios::trunc);
    out << l.seccomp->dump();
    if (!out.flush()) throw_errno("write " + path);
    c.security.seccomp = security::SeccompMode::file;
    c.security.seccomp_profile = path;
  } else {
    c.security.seccomp = security::SeccompMode::unconfined;
  }
  return c;
}

void apply_rlimits(const Spec& spec) {
  if (!spec.process) return;
  static const std::map<std::string, int> names{
      {"RLIMIT_AS", RLIMIT_AS},
      {"RLIMIT_CORE", RLIMIT_CORE},
      {"RLIMIT_CPU", RLIMIT_CPU},
      {"RLIMIT_DATA", RLIMIT_DATA},
      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
      {"RLIMIT_LOCKS", RLIMIT_LOCKS},
      {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
      {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
      {"RLIMIT_NICE", RLIMIT_NICE},
      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
      {"RLIMIT_NPROC", RLIMIT_NPROC},
      {"RLIMIT_RSS", RLIMIT_RSS},
      {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
      {"RLIMIT_RTTIME", RLIMIT_RTTIME},
      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
      {"RLIMIT_STACK", RLIMIT_STACK},
  };
  for (const auto& r : spec.process->rlimits) {
    auto it = names.find(r.type);
    if (it == names.end()) throw bad("process.rlimits", "unknown rlimit \"" + r.type + "\"");
    struct rlimit limit {
      r.soft, r.hard
    };
    if (::setrlimit(it->second, &limit) != 0) {
      throw_errno("config.json: process.rlimits: set " + r.type,
                  "a rootless container cannot raise a hard limit above yours");
    }
  }
}

}  // namespace mrun::oci
