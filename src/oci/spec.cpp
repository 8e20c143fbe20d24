#include "oci/spec.hpp"

#include <sys/resource.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <type_traits>
#include <utility>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/device_rules.hpp"
#include "mount/config_mounts.hpp"
#include "mount/mount_plan.hpp"
#include "oci/json_fields.hpp"
#include "oci/process_scheduling.hpp"
#include "oci/resources.hpp"
#include "sys/fs.hpp"

namespace mrun::oci {

using nlohmann::json;

namespace {

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
      object_at(r, "process.rlimits[]");
      runtime::Rlimit limit;
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

// uidMappings / gidMappings: [{containerID, hostID, size}], under `where` (linux., or a
// mount's).
void parse_mappings(const json& j, const char* key, const std::string& where,
                    std::optional<std::vector<IdMapping>>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array()) throw bad(where + key, "must be an array");
  out.emplace();
  for (const auto& m : *it) {
    object_at(m, where + key + "[]");
    IdMapping map;
    const std::string field = where + key + "[].";
    get(m, "containerID", map.container_id, field);
    get(m, "hostID", map.host_id, field);
    get(m, "size", map.size, field);
    out->push_back(map);
  }
}

json mappings_json(const std::vector<IdMapping>& maps) {
  json out = json::array();
  for (const auto& m : maps) {
    out.push_back({{"containerID", m.container_id}, {"hostID", m.host_id}, {"size", m.size}});
  }
  return out;
}

Linux parse_linux(const json& j) {
  object_at(j, "linux");
  Linux l;
  if (auto it = j.find("namespaces"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw bad("linux.namespaces", "must be an array");
    for (const auto& n : *it) {
      object_at(n, "linux.namespaces[]");
      Namespace ns;
      get(n, "type", ns.type, "linux.namespaces[].");
      get(n, "path", ns.path, "linux.namespaces[].");
      l.namespaces.push_back(ns);
    }
  }
  parse_mappings(j, "uidMappings", "linux.", l.uid_mappings);
  parse_mappings(j, "gidMappings", "linux.", l.gid_mappings);
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
    if (maps) j[key] = mappings_json(*maps);
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
      parse_mappings(m, "uidMappings", "mounts[].", mount.uid_mappings);
      parse_mappings(m, "gidMappings", "mounts[].", mount.gid_mappings);
      mount.extra =
          rest(m, {"destination", "type", "source", "options", "uidMappings", "gidMappings"});
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
      json mount = m.extra;
      mount["destination"] = m.destination;
      put(mount, "type", m.type);
      put(mount, "source", m.source);
      if (!m.options.empty()) mount["options"] = m.options;
      if (m.uid_mappings) mount["uidMappings"] = mappings_json(*m.uid_mappings);
      if (m.gid_mappings) mount["gidMappings"] = mappings_json(*m.gid_mappings);
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

// Id mappings as the kernel takes them: none empty, none running past 2^32.
std::vector<userns::IdMapEntry> checked_mappings(const std::vector<IdMapping>& in,
                                                 const std::string& field) {
  std::vector<userns::IdMapEntry> out;
  for (const auto& m : in) {
    if (m.size == 0 || std::uint64_t{m.container_id} + m.size > 0x100000000ULL ||
        std::uint64_t{m.host_id} + m.size > 0x100000000ULL) {
      throw bad(field, "mapping " + std::to_string(m.container_id) + " " +
                           std::to_string(m.host_id) + " " + std::to_string(m.size) +
                           " is empty or runs past 2^32");
    }
    out.push_back({m.container_id, m.host_id, m.size});
  }
  return out;
}

// The config's mount table, in its order (mount/config_mounts.hpp does the rest):
// relative bind sources are the bundle's, every option is checked now, so that a bad
// one is a 125 before anything is made.
void convert_mounts(const Spec& spec, const std::string& bundle, runtime::ContainerConfig& c,
                    const Logger& log) {
  mount::ConfigMountInput table;
  for (const auto& m : spec.mounts.value_or(std::vector<Mount>{})) {
    mount::ConfigMount out{
        m.destination, m.type.value_or(""), m.source.value_or(""), m.options, {}, {}};
    const std::string what = out.type + " on " + m.destination;
    const auto options = mount::parse_mount_options(m.options, what);
    for (const auto& ignored : options.ignored_on_bind) {
      log.debug("oci: mounts (" + what + "): " + ignored +
                " is a filesystem's option, and a bind makes none: ignored (as runc)");
    }
    bool bind = options.bind || out.type == "bind";
    if (bind) {
      if (out.source.empty())
        throw bad("mounts (" + m.destination + ")", "bind mount without a source");
      if (out.source[0] != '/') out.source = bundle + "/" + out.source;
    }
    // An idmapped bind's own mappings: both or neither, and only with idmap/ridmap.
    if (m.uid_mappings || m.gid_mappings) {
      const std::string field = "mounts (" + m.destination + ")";
      if (!options.idmap)
        throw bad(field, "uidMappings/gidMappings need the idmap or ridmap option");
      if (!m.uid_mappings || !m.gid_mappings || m.uid_mappings->empty() ||
          m.gid_mappings->empty()) {
        throw bad(field, "an idmapped mount needs both uidMappings and gidMappings");
      }
      out.uid_mappings = checked_mappings(*m.uid_mappings, field + ".uidMappings");
      out.gid_mappings = checked_mappings(*m.gid_mappings, field + ".gidMappings");
    }
    table.mounts.push_back(std::move(out));
  }
  if (spec.linux) {
    table.masked_paths = spec.linux->masked_paths.value_or(std::vector<std::string>{});
    table.readonly_paths = spec.linux->readonly_paths.value_or(std::vector<std::string>{});
    if (spec.linux->rootfs_propagation && !spec.linux->rootfs_propagation->empty()) {
      mount::parse_propagation(*spec.linux->rootfs_propagation);  // a bad value: 125 now
      table.rootfs_propagation = *spec.linux->rootfs_propagation;
    }
  }
  table.read_only_root = c.read_only;
  c.mounts = std::move(table);
}

void convert_namespaces(const Linux& l, std::uint32_t uid, std::uint32_t gid,
                        runtime::ContainerConfig& c, const Logger& log) {
  std::map<std::string, const Namespace*> by_type;
  for (const auto& n : l.namespaces) by_type[n.type] = &n;
  // Each kind: new when listed without a path, joined when listed with one, the
  // caller's when absent (the runtime spec's three cases).
  auto request = [&](const char* type) {
    runtime::NamespaceRequest r;
    auto it = by_type.find(type);
    if (it == by_type.end()) {
      r.source = runtime::NamespaceSource::callers;
    } else if (it->second->path && !it->second->path->empty()) {
      r.source = runtime::NamespaceSource::joined;
      r.path = *it->second->path;
    }
    return r;
  };
  c.namespaces.pid = request("pid");
  c.namespaces.ipc = request("ipc");
  c.namespaces.uts = request("uts");
  c.namespaces.cgroup = request("cgroup");
  c.namespaces.network = request("network");
  c.network = c.namespaces.network.source == runtime::NamespaceSource::callers
                  ? runtime::NetworkMode::host
                  : runtime::NetworkMode::none;
  if (runtime::mrun_connects_network(c.run.connected_network)) {
    // mrun run's slirp4netns or pasta connects a network namespace of the container's
    // own: one the config makes, never the host's or a joined one.
    if (c.namespaces.network.source != runtime::NamespaceSource::fresh) {
      throw bad("linux.namespaces (network)", "--network " +
                                                  runtime::to_string(c.run.connected_network) +
                                                  " needs a new network namespace");
    }
    c.network = c.run.connected_network;
  }
  if (c.namespaces.network.source == runtime::NamespaceSource::callers) {
    c.namespaces.network = {};  // NetworkMode::host says it
  }
  c.namespaces.user = request("user");
  c.namespaces.mount = request("mount");
  c.namespaces.time = request("time");
  if (c.namespaces.mount.source == runtime::NamespaceSource::callers) {
    // The container sets its root up in a mount namespace of its own and then enters
    // the caller's keeping that root (container_init.cpp): nothing is mounted on the host.
    log.debug("oci: no mount namespace asked for; the container enters the caller's");
  }
  if (c.namespaces.uts.source == runtime::NamespaceSource::callers &&
      ((!c.hostname.empty()) || !c.domainname.empty())) {
    throw bad("hostname",
              "setting a hostname or domainname needs a uts namespace of the "
              "container's own (add {\"type\": \"uts\"} to linux.namespaces)");
  }
  if (c.namespaces.user.source == runtime::NamespaceSource::callers) {
    log.debug("oci: no user namespace asked for; rootless mrun makes one");
  }
  // The maps of a new user namespace, as given: written by mrun (rootful, or inside a
  // user namespace mrun runs as root of), or by newuidmap/newgidmap rootless, which
  // check them against /etc/subuid and /etc/subgid.
  if (l.uid_mappings || l.gid_mappings) {
    if (c.namespaces.user.source != runtime::NamespaceSource::fresh) {
      throw bad("linux.uidMappings",
                "mappings are for a new user namespace (one joined by path has its own)");
    }
    if (!l.uid_mappings || !l.gid_mappings || l.uid_mappings->empty() || l.gid_mappings->empty()) {
      throw bad(
          l.uid_mappings && !l.uid_mappings->empty() ? "linux.gidMappings" : "linux.uidMappings",
          "a new user namespace needs both uid and gid mappings");
    }
    runtime::IdMappings maps;
    maps.uids = checked_mappings(*l.uid_mappings, "linux.uidMappings");
    maps.gids = checked_mappings(*l.gid_mappings, "linux.gidMappings");
    maps.callers_own = maps.uids == std::vector<userns::IdMapEntry>{{0, uid, 1}} &&
                       maps.gids == std::vector<userns::IdMapEntry>{{0, gid, 1}};
    c.id_mappings = std::move(maps);
  } else if (c.namespaces.user.source == runtime::NamespaceSource::fresh && uid == 0 &&
             c.run.userns != runtime::UsernsMode::single) {
    throw bad("linux.uidMappings",
              "a new user namespace needs uidMappings and gidMappings when mrun runs as root");
  }
}

// linux.personality: {"domain": "LINUX"|"LINUX32", "flags": [...]}. runc takes those two
// domains and no flags; so does mrun.
void convert_personality(const Linux& l, runtime::ContainerConfig& c) {
  auto it = l.extra.find("personality");
  if (it == l.extra.end() || it->is_null()) return;
  object_at(*it, "linux.personality");
  std::string domain;
  get(*it, "domain", domain, "linux.personality.");
  if (domain == "LINUX") {
    c.process.personality = 0x0000;  // PER_LINUX
  } else if (domain == "LINUX32") {
    c.process.personality = 0x0008;  // PER_LINUX32
  } else {
    throw bad("linux.personality.domain", "\"" + domain + "\" is not LINUX or LINUX32");
  }
  std::vector<std::string> flags;
  get(*it, "flags", flags, "linux.personality.");
  if (!flags.empty()) {
    throw unsupported("linux.personality.flags",
                      "no personality flags are supported (runc takes none either)");
  }
}

// "0-3,7" -> a node mask, bit N for node N (set_mempolicy's format).
std::vector<unsigned long> parse_node_list(const std::string& text, const std::string& field) {
  constexpr unsigned long max_node = 4096;
  std::vector<unsigned long> mask;
  for (const auto& range : split(text, ',')) {
    auto dash = range.find('-');
    auto first = parse_u64(range.substr(0, dash));
    auto last = dash == std::string::npos ? first : parse_u64(range.substr(dash + 1));
    if (!first || !last || *first > *last || *last >= max_node) {
      throw bad(field, "\"" + text + "\" is not a list of NUMA nodes such as 0-3,7");
    }
    for (auto node = *first; node <= *last; ++node) {
      const std::size_t word = node / (8 * sizeof(unsigned long));
      if (mask.size() <= word) mask.resize(word + 1, 0);
      mask[word] |= 1UL << (node % (8 * sizeof(unsigned long)));
    }
  }
  return mask;
}

// linux.memoryPolicy: {"mode": "MPOL_...", "nodes": "0-3", "flags": ["MPOL_F_..."]}.
void convert_memory_policy(const Linux& l, runtime::ContainerConfig& c) {
  auto it = l.extra.find("memoryPolicy");
  if (it == l.extra.end() || it->is_null()) return;
  object_at(*it, "linux.memoryPolicy");
  static const std::map<std::string, int> modes{{"MPOL_DEFAULT", 0},
                                                {"MPOL_PREFERRED", 1},
                                                {"MPOL_BIND", 2},
                                                {"MPOL_INTERLEAVE", 3},
                                                {"MPOL_LOCAL", 4},
                                                {"MPOL_PREFERRED_MANY", 5},
                                                {"MPOL_WEIGHTED_INTERLEAVE", 6}};
  static const std::map<std::string, unsigned> flag_bits{{"MPOL_F_NUMA_BALANCING", 1u << 13},
                                                         {"MPOL_F_RELATIVE_NODES", 1u << 14},
                                                         {"MPOL_F_STATIC_NODES", 1u << 15}};
  runtime::MemoryPolicy policy;
  std::string mode, nodes;
  std::vector<std::string> flags;
  get(*it, "mode", mode, "linux.memoryPolicy.");
  get(*it, "nodes", nodes, "linux.memoryPolicy.");
  get(*it, "flags", flags, "linux.memoryPolicy.");
  auto m = modes.find(mode);
  if (m == modes.end())
    throw bad("linux.memoryPolicy.mode", "\"" + mode + "\" is not an MPOL_ mode");
  policy.mode = m->second;
  for (const auto& flag : flags) {
    auto f = flag_bits.find(flag);
    if (f == flag_bits.end()) {
      throw bad("linux.memoryPolicy.flags", "\"" + flag + "\" is not an MPOL_F_ flag");
    }
    policy.flags |= f->second;
  }
  const bool takes_nodes = mode != "MPOL_DEFAULT" && mode != "MPOL_LOCAL";
  if (!nodes.empty() && !takes_nodes) {
    throw bad("linux.memoryPolicy.nodes", mode + " takes no nodes");
  }
  if (nodes.empty() && takes_nodes && mode != "MPOL_PREFERRED") {
    throw bad("linux.memoryPolicy.nodes", mode + " needs nodes");
  }
  if (!nodes.empty()) policy.nodemask = parse_node_list(nodes, "linux.memoryPolicy.nodes");
  c.process.memory_policy = std::move(policy);
}

// linux.timeOffsets: {"monotonic"|"boottime": {"secs", "nanosecs"}}, for a new time
// namespace only (a joined one has its offsets already; the kernel freezes them when the
// first process enters).
void convert_time_offsets(const Linux& l, runtime::ContainerConfig& c) {
  auto it = l.extra.find("timeOffsets");
  if (it == l.extra.end() || it->is_null()) return;
  object_at(*it, "linux.timeOffsets");
  if (c.namespaces.time.source != runtime::NamespaceSource::fresh) {
    throw bad("linux.timeOffsets", "offsets need a new time namespace (add {\"type\": \"time\"})");
  }
  for (auto clock = it->begin(); clock != it->end(); ++clock) {
    const std::string where = "linux.timeOffsets." + clock.key();
    if (clock.key() != "monotonic" && clock.key() != "boottime") {
      throw bad(where, "only monotonic and boottime have offsets");
    }
    object_at(*clock, where);
    runtime::TimeOffset offset;
    get(*clock, "secs", offset.secs, where + ".");
    get(*clock, "nanosecs", offset.nanosecs, where + ".");
    if (offset.nanosecs >= 1000000000u) throw bad(where + ".nanosecs", "must be below 1e9");
    (clock.key() == "monotonic" ? c.monotonic_offset : c.boottime_offset) = offset;
  }
}

// linux.devices as the spec defines them: type, numbers (for all but FIFOs), fileMode
// (runc's 0666 when absent; file type bits taken off), uid, gid. Pure: whether the host
// has a node to bind (rootless) is the launcher's question. The default nodes podman
// lists too are left to mrun, which always makes them, when the numbers are theirs.
void convert_devices(const json& devices, runtime::ContainerConfig& c) {
  if (!devices.is_array()) throw bad("linux.devices", "must be an array");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const json& d = devices[i];
    std::string field = "linux.devices[" + std::to_string(i) + "]";
    object_at(d, field);
    mount::ConfigDevice device;
    get(d, "path", device.path, field + ".");
    if (!absolute(device.path)) throw bad(field + ".path", "must be an absolute path");
    std::string type;
    get(d, "type", type, field + ".");
    if (type != "c" && type != "u" && type != "b" && type != "p") {
      throw bad(field + ".type", "\"" + type + "\" is not c, u, b or p");
    }
    device.type = type == "u" ? 'c' : type[0];
    std::optional<std::int64_t> major, minor;
    get(d, "major", major, field + ".");
    get(d, "minor", minor, field + ".");
    if (device.type != 'p') {
      if (!major || !minor) throw bad(field, "a " + type + " device needs major and minor");
      if (*major < 0 || *major > 0xfff || *minor < 0 || *minor > 0xfffff) {
        throw bad(field, "major:minor " + std::to_string(*major) + ":" + std::to_string(*minor) +
                             " is out of range");
      }
      device.major = static_cast<std::uint32_t>(*major);
      device.minor = static_cast<std::uint32_t>(*minor);
    }
    std::optional<std::uint32_t> mode;
    get(d, "fileMode", mode, field + ".");
    if (mode) device.file_mode = static_cast<mode_t>(*mode & 07777);
    std::optional<std::uint32_t> uid, gid;
    get(d, "uid", uid, field + ".");
    get(d, "gid", gid, field + ".");
    device.uid = uid.value_or(0);
    device.gid = gid.value_or(0);
    if (starts_with(device.path, "/dev/") && device.path.rfind('/') == 4 && device.type == 'c') {
      const std::string name = device.path.substr(5);
      const auto& defaults = mount::default_device_nodes();
      if (std::find(defaults.begin(), defaults.end(), name) != defaults.end() &&
          mount::default_device_node(name).device == ::makedev(device.major, device.minor)) {
        continue;
      }
    }
    c.linux_devices.push_back(device);
  }
}

// linux.resources, field by field (oci/resources.hpp); cgroup.cpp decides which of
// them need a cgroup and writes them.
void convert_resources(const json& r, runtime::ContainerConfig& c, const Logger& log) {
  auto parsed = parse_resources(r, "config.json");
  c.resources = std::move(parsed.resources);
  // mrun run's --memory, --memory-swap, --pids-limit and --cpus wrote them.
  c.resources.named_by_flags = c.run.resources_from_flags;
  c.resources.memory.swap_implied = c.run.swap_implied;
  if (parsed.device_rules) c.device_rules = std::move(*parsed.device_rules);
  for (const auto& line : c.resources.ignored) log.warn("config.json: " + line);
  for (const auto& field : parsed.unknown) {
    log.debug("oci: " + field + ": not a runtime-spec property, ignored");
  }
}

}  // namespace

void convert_process_security(const Process& p, security::SecurityOptions& security) {
  security.no_new_privileges = p.no_new_privileges.value_or(false);
  // Every set exactly as given; an absent set (or no capabilities at all) is empty.
  security::CapabilitySets sets;
  if (p.capabilities) {
    sets.bounding = p.capabilities->bounding.value_or(std::vector<std::string>{});
    sets.effective = p.capabilities->effective.value_or(std::vector<std::string>{});
    sets.permitted = p.capabilities->permitted.value_or(std::vector<std::string>{});
    sets.inheritable = p.capabilities->inheritable.value_or(std::vector<std::string>{});
    sets.ambient = p.capabilities->ambient.value_or(std::vector<std::string>{});
  }
  security.capability_sets = sets;
  security.cap_add.clear();
  security.cap_drop.clear();
  security.privileged = false;
}

void overlay_process(const Process& p, runtime::ProcessSpec& out) {
  out.args = p.args;
  // A name given twice: the later value wins, as in runc and crun (podman 4.3 appends
  // a CDI spec's PATH after the image's instead of replacing it).
  out.env.clear();
  for (const auto& entry : p.env) {
    std::string key = entry.substr(0, entry.find('='));
    std::erase_if(out.env, [&](const std::string& e) { return starts_with(e, key + "="); });
    out.env.push_back(entry);
  }
  if (!p.cwd.empty()) out.cwd = p.cwd;
  out.terminal = p.terminal.value_or(false);
  out.user = {p.user.uid, p.user.gid, false,
              std::vector<gid_t>(p.user.additional_gids.begin(), p.user.additional_gids.end())};
  if (p.user.umask) {
    if (*p.user.umask > 0777) throw bad("process.user.umask", "must be at most 0777");
    out.umask = static_cast<mode_t>(*p.user.umask);
  }
  if (!p.rlimits.empty()) out.rlimits = p.rlimits;
  if (p.oom_score_adj) out.oom_score_adj = p.oom_score_adj;
  if (auto it = p.extra.find("ioPriority"); it != p.extra.end() && !it->is_null()) {
    out.io_priority = parse_io_priority(*it);
  }
  if (auto it = p.extra.find("scheduler"); it != p.extra.end() && !it->is_null()) {
    out.scheduler = parse_scheduler(*it);
  }
  runtime::validate_process_limits(out);
  // Labels go on where their LSM is enabled, which the start checks
  // (launch/host_support.hpp): the conversion reads only the config.
  if (p.apparmor_profile) out.apparmor_profile = *p.apparmor_profile;
  if (p.selinux_label) out.selinux_label = *p.selinux_label;
  // The spec's defaults, not mrun run's: no capability set means none, no
  // noNewPrivileges means false.
  convert_process_security(p, out.security);
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

std::string cgroup_leaf_from_path(const std::string& path) {
  auto parts = split(path, ':');
  if (parts.size() == 3 && path[0] != '/') {
    const std::string& prefix = parts[1];
    const std::string& name = parts[2];
    if (name.ends_with(".slice")) return name;
    return (prefix.empty() ? name : prefix + "-" + name) + ".scope";
  }
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

runtime::ContainerConfig to_container_config(const Spec& spec, const std::string& bundle,
                                             const std::string& id, std::uint32_t uid,
                                             std::uint32_t gid, const Logger& log,
                                             const runtime::RunAdditions& additions) {
  runtime::ContainerConfig c;
  c.name = id;
  c.bundle = bundle;
  c.run = additions;
  if (spec.annotations) c.annotations = *spec.annotations;
  if (!spec.process) throw unsupported("process", "a container without a process");
  const Process& p = *spec.process;
  // Applied by the container's process itself (init/become_command.hpp), never
  // to mrun. The cwd is required by validate(); no linux.seccomp means no filter.
  overlay_process(p, c.process);
  c.process.user.gid_from_image = additions.gid_from_image;
  c.process.security.privileged = additions.privileged;

  c.rootfs = spec.root->path[0] == '/' ? spec.root->path : bundle + "/" + spec.root->path;
  c.read_only = spec.root->readonly.value_or(false);
  // An engine's rootfs (its snapshot) is used as it is, writes land in it
  // (c.run.overlay none); mrun run lays its overlay over an image directory.
  c.hostname = spec.hostname.value_or("");
  c.domainname = spec.domainname.value_or("");
  convert_mounts(spec, bundle, c, log);
  if (spec.hooks) {
    for (const auto& [stage, list] : spec.hooks->by_stage) {
      auto& out = runtime::hooks_of(c.hooks, stage);  // stage names checked by parse_spec
      for (const auto& h : list) out.push_back({h.path, h.args, h.env, h.timeout});
    }
  }
  if (spec.annotations) {
    auto it = spec.annotations->find("run.oci.keep_original_groups");
    c.process.keep_groups = it != spec.annotations->end() && it->second == "1";
  }

  if (!spec.linux) throw unsupported("linux", "a config without a linux section");
  const Linux& l = *spec.linux;
  for (auto it = l.extra.begin(); it != l.extra.end(); ++it) {
    // An SELinux label, checked against the host at the start (launch/host_support.hpp).
    if (it.key() == "mountLabel") {
      if (!it.value().is_string()) throw unsupported("linux.mountLabel", "must be a string");
      c.mount_label = it.value().get<std::string>();
    }
    if (it.key() == "intelRdt") {
      // Intel RDT (and AMD's QoS) works through the resctrl filesystem, which mrun does
      // not drive: a config asking for it is refused.
      throw unsupported("linux.intelRdt", "mrun does not drive resctrl (Intel RDT)");
    }
  }
  convert_namespaces(l, uid, gid, c, log);
  convert_time_offsets(l, c);
  convert_personality(l, c);
  convert_memory_policy(l, c);
  if (l.devices) convert_devices(*l.devices, c);
  c.devices = additions.devices;
  if (l.resources) convert_resources(*l.resources, c, log);
  if (l.cgroups_path && !l.cgroups_path->empty()) {
    // Rootless, mrun's leaf goes where it can move the container: its delegated subtree.
    if (uid == 0) {
      // The cgroup the engine named, exactly: containerd's CRI plugin, the kubelet and
      // cadvisor find a container's cgroup by its cgroupsPath.
      c.run.cgroup_parent = cgroup_parent_from_path(*l.cgroups_path);
      c.run.cgroup_leaf = cgroup_leaf_from_path(*l.cgroups_path);
      log.debug("oci: linux.cgroupsPath " + *l.cgroups_path + ": leaf " + c.run.cgroup_leaf +
                " under " +
                (c.run.cgroup_parent.empty() ? "the cgroup2 root" : c.run.cgroup_parent));
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
  if (l.seccomp) {
    c.process.security.seccomp = security::SeccompMode::file;
    c.process.security.seccomp_profile_json = l.seccomp->dump();
  } else {
    // An OCI config without linux.seccomp: no filter; mrun run: its default profile or
    // the --security-opt file.
    c.process.security.seccomp = additions.seccomp;
    c.process.security.seccomp_profile = additions.seccomp_profile;
  }
  return c;
}

}  // namespace mrun::oci
