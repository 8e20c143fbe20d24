// oci/run_config: `mrun run`'s flags as a runtime-spec config, and that config through
// the same conversion as a bundle's (one model for every way in).
#include <linux/capability.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "cgroup/limits.hpp"
#include "oci/run_config.hpp"
#include "oci/spec.hpp"

using namespace mrun;
using mrun::oci::RunRequest;

namespace {

security::CapMask podman_defaults() {
  return security::parse_caps_conf(
      "CHOWN\nDAC_OVERRIDE\nFOWNER\nFSETID\nKILL\nNET_BIND_SERVICE\nSETFCAP\nSETGID\nSETPCAP\n"
      "SETUID\nSYS_CHROOT\n",
      "test");
}

oci::RunPolicy policy(bool rootful = false) {
  return {podman_defaults(), security::all_capabilities(40), rootful};
}

RunRequest request() {
  RunRequest r;
  r.name = "c1";
  r.rootfs = "/images/busybox";
  r.args = {"/bin/sh", "-c", "true"};
  r.env = {"PATH=/bin", "HOSTNAME=c1"};
  r.network = runtime::NetworkMode::slirp4netns;
  r.security.seccomp = security::SeccompMode::automatic;
  return r;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<std::string> namespace_types(const oci::Spec& spec) {
  std::vector<std::string> types;
  for (const auto& n : spec.linux->namespaces) types.push_back(n.type);
  return types;
}

runtime::ContainerConfig convert(const oci::RunConfig& built, std::uint32_t uid = 1000) {
  return oci::to_container_config(built.spec, {}, "c1", uid, uid, Logger{}, built.additions);
}

}  // namespace

TEST_CASE("mrun run's config: process, root, hostname and the namespaces it makes") {
  auto built = oci::build_run_config(request(), policy());
  const oci::Spec& spec = built.spec;
  REQUIRE_NOTHROW(oci::validate(spec));
  REQUIRE(spec.process->args == std::vector<std::string>{"/bin/sh", "-c", "true"});
  REQUIRE(spec.process->env == std::vector<std::string>{"PATH=/bin", "HOSTNAME=c1"});
  REQUIRE(spec.process->cwd == "/");
  REQUIRE(spec.process->terminal == false);
  REQUIRE(spec.process->no_new_privileges == true);
  REQUIRE(spec.root->path == "/images/busybox");
  REQUIRE(spec.root->readonly == false);
  REQUIRE(spec.hostname == "c1");
  REQUIRE(namespace_types(spec) ==
          std::vector<std::string>{"pid", "ipc", "uts", "mount", "cgroup", "network", "user"});
  REQUIRE(has(*spec.linux->masked_paths, "/proc/kcore"));
  REQUIRE(has(*spec.linux->readonly_paths, "/proc/sys"));
  REQUIRE_FALSE(spec.linux->resources);
  // Ping by default, as podman: ICMP echo sockets for the container's root group.
  REQUIRE(spec.linux->sysctl->at("net.ipv4.ping_group_range") == "0 0");
  REQUIRE(built.additions.connected_network == runtime::NetworkMode::slirp4netns);
  REQUIRE(built.additions.seccomp == security::SeccompMode::automatic);
}

TEST_CASE("mrun run's config: --network host, rootful, --userns single") {
  auto r = request();
  r.network = runtime::NetworkMode::host;
  auto host = oci::build_run_config(r, policy()).spec;
  auto types = namespace_types(host);
  REQUIRE_FALSE(has(types, "network"));
  REQUIRE_FALSE(host.linux->sysctl);  // the host's network, the host's setting
  REQUIRE(has(types, "user"));
  REQUIRE_FALSE(has(namespace_types(oci::build_run_config(request(), policy(true)).spec), "user"));
  r.additions.userns = runtime::UsernsMode::single;
  REQUIRE(has(namespace_types(oci::build_run_config(r, policy(true)).spec), "user"));
}

TEST_CASE("mrun run's config: podman's capability rules written out as the five sets") {
  auto root = oci::build_run_config(request(), policy()).spec.process->capabilities;
  REQUIRE(root->bounding->size() == 11);
  REQUIRE(root->effective == root->bounding);
  REQUIRE(root->permitted == root->bounding);
  REQUIRE(root->inheritable->empty());  // CVE-2022-27649
  REQUIRE(root->ambient->empty());

  auto r = request();
  r.security.cap_drop = {"ALL"};
  r.security.cap_add = {"NET_BIND_SERVICE"};
  r.user.uid = 1000;
  auto user = oci::build_run_config(r, policy()).spec.process->capabilities;
  const std::vector<std::string> bind{"CAP_NET_BIND_SERVICE"};
  REQUIRE(*user->bounding == bind);
  REQUIRE(*user->effective == bind);
  REQUIRE(*user->inheritable == bind);
  REQUIRE(*user->ambient == bind);  // survives execve as a non-root user

  r.security.cap_add = {"NOT_A_CAP"};
  REQUIRE_THROWS_WITH(oci::build_run_config(r, policy()), Catch::Contains("NOT_A_CAP"));
}

TEST_CASE("mrun run's config: NET_RAW of the default set stays off a rootful host network") {
  auto with_raw = policy(true);
  with_raw.default_caps |= security::cap_bit(CAP_NET_RAW);
  auto caps_of = [&](runtime::NetworkMode network, bool rootful, std::vector<std::string> add) {
    auto r = request();
    r.network = network;
    r.security.cap_add = std::move(add);
    auto p = with_raw;
    p.rootful = rootful;
    return *oci::build_run_config(r, p).spec.process->capabilities->bounding;
  };
  using runtime::NetworkMode;
  REQUIRE(has(caps_of(NetworkMode::slirp4netns, true, {}), "CAP_NET_RAW"));
  REQUIRE(has(caps_of(NetworkMode::none, true, {}), "CAP_NET_RAW"));
  // Rootless, the host's network namespace is not the container user namespace's: its
  // NET_RAW reaches nothing there, and stays.
  REQUIRE(has(caps_of(NetworkMode::host, false, {}), "CAP_NET_RAW"));
  REQUIRE_FALSE(has(caps_of(NetworkMode::host, true, {}), "CAP_NET_RAW"));
  REQUIRE(has(caps_of(NetworkMode::host, true, {"NET_RAW"}), "CAP_NET_RAW"));
}

TEST_CASE("mrun run's config: --privileged lists every capability and drops the filter") {
  auto r = request();
  r.security.privileged = true;
  auto built = oci::build_run_config(r, policy());
  REQUIRE(built.spec.process->capabilities->bounding->size() == 41);
  REQUIRE(built.additions.privileged);
  REQUIRE(built.additions.seccomp == security::SeccompMode::unconfined);
  auto c = convert(built);
  REQUIRE(c.process.security.privileged);  // cut to what mrun holds, at apply time
  REQUIRE(c.process.security.seccomp == security::SeccompMode::unconfined);
  // An explicit profile stays.
  r.security.seccomp = security::SeccompMode::file;
  r.security.seccomp_profile = "/etc/profile.json";
  auto c2 = convert(oci::build_run_config(r, policy()));
  REQUIRE(c2.process.security.seccomp == security::SeccompMode::file);
  REQUIRE(c2.process.security.seccomp_profile == "/etc/profile.json");
}

TEST_CASE("mrun run's config: volumes are rbind entries, read-only all the way down") {
  auto r = request();
  r.volumes = {{"/srv/data", "/data", true}, {"/srv/rw", "/rw", false}};
  r.read_only = true;
  auto spec = oci::build_run_config(r, policy()).spec;
  REQUIRE(spec.root->readonly == true);
  const auto& mounts = *spec.mounts;
  REQUIRE(mounts[0].destination == "/proc");
  REQUIRE(mounts[mounts.size() - 2].destination == "/data");
  REQUIRE(mounts[mounts.size() - 2].options == std::vector<std::string>{"rbind", "rro"});
  REQUIRE(mounts.back().options == std::vector<std::string>{"rbind"});
  r.volumes = {{"/tmp", "/tmp/../proc/sys", false}};
  REQUIRE_THROWS_WITH(oci::build_run_config(r, policy()),
                      Catch::Contains("covers the container's /proc"));
}

TEST_CASE("mrun run's config: groups, --keep-groups and -u UID alone") {
  auto r = request();
  r.user.uid = 1000;
  r.user.gid = 1000;
  r.user.additional_gids = {10, 20};
  auto spec = oci::build_run_config(r, policy()).spec;
  REQUIRE(spec.process->user.additional_gids == std::vector<std::uint32_t>{10, 20});
  REQUIRE_FALSE(spec.annotations);
  r = request();
  r.keep_groups = true;
  r.user.gid_from_image = true;
  auto built = oci::build_run_config(r, policy());
  REQUIRE(built.spec.annotations->at("run.oci.keep_original_groups") == "1");
  auto c = convert(built);
  REQUIRE(c.process.keep_groups);
  REQUIRE(c.process.user.gid_from_image);
}

TEST_CASE("mrun run's config: the resource flags as linux.resources, named by the flags") {
  auto r = request();
  cgroup::Limits limits;
  limits.memory = 100 << 20;
  limits.pids = 64;
  limits.cpus = 0.5;
  r.resources = cgroup::to_resources(limits);
  auto built = oci::build_run_config(r, policy());
  const auto& res = *built.spec.linux->resources;
  REQUIRE(res["memory"]["limit"] == 100 << 20);
  REQUIRE(res["memory"]["swap"] == 200 << 20);  // as much swap again, as podman
  REQUIRE(res["pids"]["limit"] == 64);
  REQUIRE(res["cpu"]["quota"] == 50000);
  REQUIRE(res["cpu"]["period"] == 100000);
  auto c = convert(built);
  REQUIRE(c.resources.memory.limit == 100 << 20);
  REQUIRE(c.resources.memory.swap_implied);
  REQUIRE(c.resources.named_by_flags);
  REQUIRE(c.resources.pids_limit == 64);
}

TEST_CASE("mrun run's config goes through the bundle's conversion unchanged") {
  auto r = request();
  r.tty = true;
  r.workdir = "/srv";
  r.security.cap_add = {"NET_ADMIN"};
  auto built = oci::build_run_config(r, policy());
  auto c = convert(built);
  REQUIRE(c.name == "c1");
  REQUIRE(c.bundle.empty());
  REQUIRE(c.rootfs == "/images/busybox");
  REQUIRE(c.process.terminal);
  REQUIRE(c.process.cwd == "/srv");
  REQUIRE(c.hostname == "c1");
  REQUIRE(c.network == runtime::NetworkMode::slirp4netns);
  REQUIRE(c.namespaces.pid.source == runtime::NamespaceSource::fresh);
  REQUIRE(c.namespaces.network.source == runtime::NamespaceSource::fresh);
  REQUIRE(has(c.process.security.capability_sets->bounding, "CAP_NET_ADMIN"));
  REQUIRE(c.process.security.seccomp == security::SeccompMode::automatic);
  REQUIRE(c.mounts.mounts.size() == built.spec.mounts->size());
  // What `mrun run --print-config` prints is a config.json mrun reads back as it was.
  auto reread = oci::parse_spec(oci::to_json(built.spec).dump());
  REQUIRE(oci::to_json(reread) == oci::to_json(built.spec));
}
