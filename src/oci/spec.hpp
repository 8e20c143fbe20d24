// OCI runtime-spec 1.x config.json as typed data (nlohmann-json), its validation, the
// default config `mrun spec` writes, and the conversion to runtime::ContainerConfig: an
// OCI bundle takes the same launcher path as `mrun run`'s flags.
//
// Optional fields stay std::optional so that parse -> serialise reproduces a config
// exactly; properties unknown to this version are kept in `extra` (the spec says
// runtimes MUST ignore unknown properties, and a round trip must not lose them).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/oci_version.hpp"
#include "runtime/config.hpp"

namespace mrun::oci {

struct User {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::optional<std::uint32_t> umask;
  std::vector<std::uint32_t> additional_gids;
  std::optional<std::string> username;  // Windows only
};

struct Capabilities {
  std::optional<std::vector<std::string>> bounding, effective, inheritable, permitted, ambient;
};

struct Process {
  std::optional<bool> terminal;
  User user;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd;
  std::optional<Capabilities> capabilities;
  std::vector<runtime::Rlimit> rlimits;
  std::optional<bool> no_new_privileges;
  std::optional<std::string> apparmor_profile;
  std::optional<std::string> selinux_label;
  std::optional<int> oom_score_adj;
  nlohmann::json extra = nlohmann::json::object();
};

struct Root {
  std::string path;
  std::optional<bool> readonly;
};

struct IdMapping {
  std::uint32_t container_id = 0;
  std::uint32_t host_id = 0;
  std::uint32_t size = 0;
};

struct Mount {
  std::string destination;
  std::optional<std::string> type;
  std::optional<std::string> source;
  std::vector<std::string> options;
  // An idmapped bind's own mappings (runtime-spec 1.1, with the idmap or ridmap option).
  std::optional<std::vector<IdMapping>> uid_mappings, gid_mappings;
  nlohmann::json extra = nlohmann::json::object();
};

struct Hook {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;
};

struct Hooks {
  // Keyed by the spec's names: prestart, createRuntime, createContainer,
  // startContainer, poststart, poststop.
  std::map<std::string, std::vector<Hook>> by_stage;
};

struct Namespace {
  std::string type;  // pid network mount ipc uts user cgroup time
  std::optional<std::string> path;
};

struct Linux {
  std::vector<Namespace> namespaces;
  std::optional<std::vector<IdMapping>> uid_mappings, gid_mappings;
  std::optional<nlohmann::json> devices;    // kept as written; converted in to_container_config
  std::optional<nlohmann::json> resources;  // checked field by field in the conversion
  std::optional<std::string> cgroups_path;
  std::optional<nlohmann::json> seccomp;  // handed to mrun's seccomp compiler as is
  std::optional<std::vector<std::string>> masked_paths, readonly_paths;
  std::optional<std::map<std::string, std::string>> sysctl;
  std::optional<std::string> rootfs_propagation;
  nlohmann::json extra = nlohmann::json::object();
};

struct Spec {
  std::string oci_version;
  std::optional<Process> process;
  std::optional<Root> root;
  std::optional<std::vector<Mount>> mounts;
  std::optional<std::string> hostname;
  std::optional<std::string> domainname;
  std::optional<Hooks> hooks;
  std::optional<std::map<std::string, std::string>> annotations;
  std::optional<Linux> linux;
  nlohmann::json extra = nlohmann::json::object();
};

inline constexpr const char* spec_version = mrun::oci_version;

// Parses and type-checks; throws mrun::Error ("config.json: process.args: ...") for a
// malformed document or a property of the wrong type.
Spec parse_spec(const std::string& text);
nlohmann::json to_json(const Spec& spec);
// The spec's MUSTs, with runc-like messages: ociVersion 1.x, root.path, process.args,
// absolute cwd, mount destinations, hook paths, namespace types.
void validate(const Spec& spec);

// `mrun spec [--rootless]`: what runc spec writes (args ["sh"], terminal, rootfs
// "rootfs"); rootless: a user namespace mapping uid/gid to container root, no network
// namespace, /sys bound from the host, no resources.
Spec default_spec(bool rootless, std::uint32_t uid, std::uint32_t gid);

// Reads <bundle>/config.json, validates it.
Spec load_bundle(const std::string& bundle);

// The subset mrun honours today. Anything else that is set fails with an Error naming
// the property (exit 125); labels (apparmor, selinux) are accepted and reported under
// --debug, as the issue asks. `uid`/`gid` are the caller's (the id maps must agree with
// them). linux.seccomp travels as text in the security options (nothing is written).
// `additions`: what mrun run adds (runtime::RunAdditions); a bundle has none.
runtime::ContainerConfig to_container_config(const Spec& spec, const std::string& bundle,
                                             const std::string& id, std::uint32_t uid,
                                             std::uint32_t gid, const Logger& log,
                                             const runtime::RunAdditions& additions = {});

// A process object alone (`mrun exec --process FILE`, runc's process.json): parsed and
// type-checked as config.json's, args non-empty, cwd absolute when given. Errors start
// with "process.json: ".
Process parse_process_text(const std::string& text);
// process.noNewPrivileges and the five capability sets, exactly, as mrun's security
// options (the spec's defaults: none of either when absent).
void convert_process_security(const Process& p, security::SecurityOptions& security);

// What a process object says, over `out`, for create (over the defaults) and `mrun exec
// --process` (over the container's exec.json) alike: args, env (a name given twice:
// the later value wins), user, terminal, capabilities and noNewPrivileges always; cwd,
// umask, rlimits, oomScoreAdj, ioPriority, scheduler and the labels where it gives
// them. The container's process applies the result (init/become_command.hpp); the
// seccomp filter and the rest of `out` stay. Throws naming the field ("config.json:
// process.user.umask ...").
void overlay_process(const Process& p, runtime::ProcessSpec& out);

// linux.cgroupsPath as the parent directory of the container's leaf, relative to the
// cgroup2 root: systemd's "slice:prefix:name" (as engines pass it with --systemd-cgroup)
// gives the slice's directory ("machine-a.slice" -> "machine.slice/machine-a.slice"), a
// cgroupfs path "/a/b/c" gives "a/b".
std::string cgroup_parent_from_path(const std::string& path);
// linux.cgroupsPath's own cgroup, the leaf in that parent, as runc names it: a cgroupfs
// path's last part ("/a/b/c" gives "c"); "slice:prefix:name" gives "prefix-name.scope"
// ("name" itself when it is a slice, "name.scope" without a prefix).
std::string cgroup_leaf_from_path(const std::string& path);

}  // namespace mrun::oci
