// config.json <-> typed structs, validation and conversion (src/oci/spec.hpp), checked
// against real configs written by `crun spec` and `runc spec` (fixtures in this folder).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "launch/host_support.hpp"
#include "oci/spec.hpp"
#include "security/lsm.hpp"

using namespace mrun;
using nlohmann::json;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(MRUN_OCI_FIXTURES) + "/" + name);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

runtime::ContainerConfig convert(const oci::Spec& spec, std::uint32_t uid = 1000) {
  return oci::to_container_config(spec, "/bundle", "c1", uid, uid, Logger());
}

// The message of the Error that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

oci::Spec edited(const std::string& name, const std::function<void(json&)>& edit) {
  json j = json::parse(fixture(name));
  edit(j);
  return oci::parse_spec(j.dump());
}

}  // namespace

TEST_CASE("real configs from crun spec and runc spec round-trip exactly") {
  for (const char* name :
       {"crun-spec.json", "crun-spec-rootless.json", "runc-spec.json", "runc-spec-rootless.json"}) {
    INFO(name);
    std::string text = fixture(name);
    oci::Spec spec = oci::parse_spec(text);
    REQUIRE_NOTHROW(oci::validate(spec));
    REQUIRE(oci::to_json(spec) == json::parse(text));
    // and again, from our own output
    REQUIRE(oci::to_json(oci::parse_spec(oci::to_json(spec).dump())) == json::parse(text));
  }
}

TEST_CASE("mrun spec writes what runc spec writes, --rootless included") {
  for (bool rootless : {false, true}) {
    INFO(rootless);
    json ours = oci::to_json(oci::default_spec(rootless, 1000, 1000));
    json runc = json::parse(fixture(rootless ? "runc-spec-rootless.json" : "runc-spec.json"));
    ours["ociVersion"] = runc["ociVersion"];
    ours["hostname"] = runc["hostname"];
    if (rootless) {
      ours["linux"]["uidMappings"] = runc["linux"]["uidMappings"];
      ours["linux"]["gidMappings"] = runc["linux"]["gidMappings"];
    }
    REQUIRE(ours.dump(2) == runc.dump(2));
    oci::Spec spec = oci::default_spec(rootless, 1000, 1000);
    REQUIRE_NOTHROW(oci::validate(spec));
    REQUIRE(oci::to_json(oci::parse_spec(oci::to_json(spec).dump())) == oci::to_json(spec));
  }
}

TEST_CASE("properties unknown to mrun survive a round trip") {
  auto spec = edited("crun-spec.json", [](json& j) {
    j["vendorThing"] = {{"a", 1}};
    j["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_IDLE"}};
    j["linux"]["futureField"] = true;
  });
  json out = oci::to_json(spec);
  REQUIRE(out["vendorThing"]["a"] == 1);
  REQUIRE(out["process"]["ioPriority"]["class"] == "IOPRIO_CLASS_IDLE");
  REQUIRE(out["linux"]["futureField"] == true);
}

TEST_CASE("validation follows the spec's MUSTs with runc-like messages") {
  auto fails = [](const std::function<void(json&)>& edit) {
    return error_of([&] { oci::validate(edited("runc-spec.json", edit)); });
  };
  REQUIRE_THAT(fails([](json& j) { j.erase("ociVersion"); }), Catch::Contains("ociVersion"));
  REQUIRE_THAT(fails([](json& j) { j["ociVersion"] = "2.0.0"; }),
               Catch::Contains("unsupported ociVersion \"2.0.0\""));
  REQUIRE_THAT(fails([](json& j) { j.erase("root"); }), Catch::Contains("root must be specified"));
  REQUIRE_THAT(fails([](json& j) { j["process"]["cwd"] = "tmp"; }),
               Catch::Contains("must be an absolute path"));
  REQUIRE_THAT(fails([](json& j) { j["process"]["args"] = json::array(); }),
               Catch::Contains("args must not be empty"));
  REQUIRE_THAT(fails([](json& j) { j["mounts"][0]["destination"] = "proc"; }),
               Catch::Contains("destination \"proc\""));
  REQUIRE_THAT(fails([](json& j) {
                 j["hooks"] = {{"prestart", {{{"path", "hook"}}}}};
               }),
               Catch::Contains("hooks.prestart"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "pid"}});
               }),
               Catch::Contains("duplicate namespace type \"pid\""));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "bogus"}});
               }),
               Catch::Contains("unknown namespace type"));
  REQUIRE(fails([](json&) {}).empty());
}

TEST_CASE("malformed documents and wrong types name what is wrong") {
  REQUIRE_THAT(error_of([] { oci::parse_spec("{\"ociVersion\": "); }),
               Catch::Contains("malformed JSON"));
  REQUIRE_THAT(error_of([] { oci::parse_spec("[]"); }), Catch::Contains("must be an object"));
  REQUIRE_THAT(
      error_of([] { edited("runc-spec.json", [](json& j) { j["process"]["args"] = "sh"; }); }),
      Catch::Contains("process.args: wrong type"));
  REQUIRE_THAT(
      error_of([] { edited("runc-spec.json", [](json& j) { j["process"]["user"]["uid"] = -1; }); }),
      Catch::Contains("process.user.uid"));
  REQUIRE_THAT(error_of([] { oci::parse_spec(R"({"ociVersion": 1e999})"); }),
               Catch::Contains("malformed JSON"));
  // An entry of a list of objects that is not one, named as such (it became an empty
  // record before, refused later for a field it never had).
  REQUIRE_THAT(
      error_of([] { edited("runc-spec.json", [](json& j) { j["process"]["rlimits"] = {5}; }); }),
      Catch::Contains("process.rlimits[]: must be an object"));
  REQUIRE_THAT(error_of([] {
                 edited("runc-spec.json",
                        [](json& j) { j["linux"]["namespaces"].push_back("pid"); });
               }),
               Catch::Contains("linux.namespaces[]: must be an object"));
  REQUIRE_THAT(error_of([] {
                 edited("runc-spec.json", [](json& j) { j["linux"]["uidMappings"] = {true}; });
               }),
               Catch::Contains("linux.uidMappings[]: must be an object"));
}

TEST_CASE("a number is never narrowed or rounded into a field (tests/fuzz/regressions/config)") {
  auto err = [](const std::function<void(json&)>& edit) {
    return error_of([&] { edited("runc-spec.json", edit); });
  };
  // 2^32 would have been uid 0, -1 gid 4294967295, 1.5 s a timeout of 1 s.
  REQUIRE_THAT(err([](json& j) { j["process"]["user"]["uid"] = 4294967296ULL; }),
               Catch::Contains("process.user.uid: 4294967296 is out of range"));
  REQUIRE_THAT(err([](json& j) {
                 j["process"]["user"]["additionalGids"] = {5, -1};
               }),
               Catch::Contains("process.user.additionalGids[1]: must be a non-negative integer"));
  REQUIRE_THAT(err([](json& j) { j["process"]["oomScoreAdj"] = 3000000000LL; }),
               Catch::Contains("process.oomScoreAdj: 3000000000 is out of range"));
  REQUIRE_THAT(err([](json& j) {
                 j["hooks"]["prestart"] = {{{"path", "/x"}, {"timeout", 1.5}}};
               }),
               Catch::Contains("hooks.prestart[].timeout: must be an integer"));
  REQUIRE(edited("runc-spec.json", [](json& j) {
            j["process"]["user"]["uid"] = 4294967295ULL;
          }).process->user.uid == 4294967295U);
}

TEST_CASE("linux.resources of the wrong shape are an Error naming the field") {
  auto err = [](const json& resources) {
    return error_of([&] {
      convert(edited("crun-spec.json", [&](json& j) { j["linux"]["resources"] = resources; }));
    });
  };
  REQUIRE_THAT(err({{"devices", {1}}}),
               Catch::Contains("linux.resources.devices[0]: must be an object"));
  REQUIRE_THAT(err({{"devices", 5}}), Catch::Contains("linux.resources.devices: must be an array"));
  REQUIRE_THAT(err({{"devices", {{{"allow", true}, {"major", "10"}}}}}),
               Catch::Contains("linux.resources.devices[0].major: wrong type"));
  REQUIRE_THAT(err({{"cpu", {{"quota", "50000"}}}}),
               Catch::Contains("linux.resources.cpu.quota: wrong type"));
  REQUIRE_THAT(err({{"cpu", {{"quota", 50000}, {"period", -1}}}}),
               Catch::Contains("linux.resources.cpu.period: must be a non-negative integer"));
}

TEST_CASE("crun spec converts to the ContainerConfig mrun run would build") {
  auto c = convert(oci::parse_spec(fixture("crun-spec.json")));
  REQUIRE(c.name == "c1");
  REQUIRE(c.process.args == std::vector<std::string>{"sh"});
  REQUIRE(c.rootfs == "/bundle/rootfs");
  REQUIRE(c.read_only);
  REQUIRE(c.process.terminal);
  REQUIRE(c.process.cwd == "/");
  REQUIRE(c.hostname == "crun");
  REQUIRE(c.network == runtime::NetworkMode::none);
  REQUIRE(c.process.security.no_new_privileges);
  REQUIRE(c.process.security.seccomp == security::SeccompMode::unconfined);  // no linux.seccomp
  const std::vector<std::string> three{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
  REQUIRE(c.process.security.capability_sets);
  REQUIRE(c.process.security.capability_sets->bounding == three);
  REQUIRE(c.process.security.capability_sets->effective == three);
  REQUIRE(c.process.security.capability_sets->permitted == three);
  REQUIRE(c.process.security.capability_sets->inheritable.empty());
  REQUIRE(c.process.security.capability_sets->ambient == three);
  REQUIRE((c.process.security.cap_add.empty() && c.process.security.cap_drop.empty()));
  REQUIRE(c.process.rlimits.size() == 1);  // for the container's process, never mrun's own
  REQUIRE((c.process.rlimits[0].type == "RLIMIT_NOFILE" && c.process.rlimits[0].hard == 1024));
  REQUIRE(c.bundle == "/bundle");
}

TEST_CASE("rootless specs convert, their maps as given") {
  for (const char* name : {"crun-spec-rootless.json", "runc-spec-rootless.json"}) {
    INFO(name);
    auto spec = oci::parse_spec(fixture(name));
    // crun leaves the maps out (it fills them in at run time); runc writes its caller's.
    std::uint32_t uid = spec.linux->uid_mappings ? (*spec.linux->uid_mappings)[0].host_id : 1000;
    auto c = convert(spec, uid);
    bool netns = std::any_of(spec.linux->namespaces.begin(), spec.linux->namespaces.end(),
                             [](const oci::Namespace& n) { return n.type == "network"; });
    REQUIRE((c.network == runtime::NetworkMode::host) == !netns);  // runc: none, crun: one
    if (spec.linux->uid_mappings) {
      // The caller's own single map needs no newuidmap; another caller's does (and
      // newuidmap then refuses it against /etc/subuid, at run time).
      REQUIRE(c.id_mappings->callers_own);
      REQUIRE_FALSE(convert(spec, uid + 1).id_mappings->callers_own);
    }
  }
  REQUIRE_NOTHROW(convert(oci::default_spec(true, 4242, 4242), 4242));
}

TEST_CASE("linux.namespaces user, mount and time: new, joined or the caller's, maps, offsets") {
  auto c = convert(
      edited(
          "runc-spec.json",
          [](json& j) {
            j["linux"]["namespaces"].push_back({{"type", "user"}});
            j["linux"]["namespaces"].push_back({{"type", "time"}});
            j["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}};
            j["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 10}},
                                         {{"containerID", 10}, {"hostID", 300000}, {"size", 5}}};
            j["linux"]["timeOffsets"] = {{"boottime", {{"secs", 86400}, {"nanosecs", 0}}},
                                         {"monotonic", {{"secs", -5}, {"nanosecs", 7}}}};
          }),
      0);
  REQUIRE(c.namespaces.user.source == runtime::NamespaceSource::fresh);
  REQUIRE(c.namespaces.time.source == runtime::NamespaceSource::fresh);
  REQUIRE(c.namespaces.mount.source == runtime::NamespaceSource::fresh);
  REQUIRE(c.id_mappings->uids == std::vector<userns::IdMapEntry>{{0, 100000, 65536}});
  REQUIRE(c.id_mappings->gids.size() == 2);
  REQUIRE(c.boottime_offset == runtime::TimeOffset{86400, 0});
  REQUIRE(c.monotonic_offset == runtime::TimeOffset{-5, 7});

  auto joined =
      convert(edited("runc-spec.json",
                     [](json& j) {
                       j.erase("hostname");
                       j["linux"]["namespaces"] = {{{"type", "mount"}, {"path", "/proc/1/ns/mnt"}},
                                                   {{"type", "user"}, {"path", "/proc/1/ns/user"}},
                                                   {{"type", "time"}, {"path", "/proc/1/ns/time"}}};
                     }),
              0);
  REQUIRE(joined.namespaces.user.source == runtime::NamespaceSource::joined);
  REQUIRE(joined.namespaces.user.path == "/proc/1/ns/user");
  REQUIRE(joined.namespaces.mount.source == runtime::NamespaceSource::joined);
  REQUIRE(joined.namespaces.time.source == runtime::NamespaceSource::joined);
  REQUIRE(joined.namespaces.pid.source == runtime::NamespaceSource::callers);
  REQUIRE_FALSE(joined.id_mappings);

  auto fails = [](const std::function<void(json&)>& edit, std::uint32_t uid = 0) {
    return error_of([&] { convert(edited("runc-spec.json", edit), uid); });
  };
  // Root asked for a new user namespace without maps: nothing to map it with.
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "user"}});
               }),
               Catch::Contains("needs uidMappings and gidMappings"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "user"}});
                 j["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 1}, {"size", 1}}};
               }),
               Catch::Contains("both uid and gid mappings"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "user"}});
                 j["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 1}, {"size", 0}}};
                 j["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 1}, {"size", 1}}};
               }),
               Catch::Contains("is empty or runs past 2^32"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["timeOffsets"] = {{"boottime", {{"secs", 1}}}};
               }),
               Catch::Contains("offsets need a new time namespace"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"].push_back({{"type", "time"}});
                 j["linux"]["timeOffsets"] = {{"realtime", {{"secs", 1}}}};
               }),
               Catch::Contains("only monotonic and boottime"));
}

TEST_CASE("no mount entry in linux.namespaces: the caller's mount namespace, mounts kept") {
  // runc runs such a config; the mounts are still made, in a namespace the container
  // leaves once its root is set up (mrun-oci(1)).
  auto without_mount = [](json& j) {
    auto& ns = j["linux"]["namespaces"];
    ns.erase(
        std::remove_if(ns.begin(), ns.end(), [](const json& n) { return n["type"] == "mount"; }),
        ns.end());
  };
  auto c = convert(edited("runc-spec.json", without_mount), 0);
  REQUIRE(c.namespaces.mount.source == runtime::NamespaceSource::callers);
  REQUIRE(c.namespaces.pid.source == runtime::NamespaceSource::fresh);
  REQUIRE_FALSE(c.mounts.mounts.empty());
  auto rootless = convert(edited("runc-spec-rootless.json", without_mount), 1000);
  REQUIRE(rootless.namespaces.mount.source == runtime::NamespaceSource::callers);
}

TEST_CASE("process.env: a name given twice keeps its later value (podman's CDI PATH)") {
  auto c = convert(edited("crun-spec.json", [](json& j) {
    j["process"]["env"] = {"PATH=/bin", "A=1", "PATH=/bin:/opt/x/bin"};
  }));
  REQUIRE(c.process.env == std::vector<std::string>{"A=1", "PATH=/bin:/opt/x/bin"});
}

TEST_CASE("namespaced sysctls (podman's ping_group_range) are carried to the container") {
  auto c = convert(edited("crun-spec.json", [](json& j) {
    j["linux"]["sysctl"] = {{"net.ipv4.ping_group_range", "0 0"}, {"kernel.shmmax", "1024"}};
  }));
  REQUIRE(c.sysctl == std::map<std::string, std::string>{{"kernel.shmmax", "1024"},
                                                         {"net.ipv4.ping_group_range", "0 0"}});
}

TEST_CASE("linux.devices as the spec has them: type, numbers, mode, owner") {
  auto with_null = [](int minor) {
    return edited("crun-spec.json", [minor](json& j) {
      j["process"]["user"]["umask"] = 18;
      j["linux"]["devices"] = {
          {{"path", "/dev/null"}, {"type", "c"}, {"major", 1}, {"minor", minor}}};
      j["linux"]["resources"]["devices"].push_back(
          {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", minor}, {"access", "rwm"}});
    });
  };
  auto c = convert(with_null(3));
  // /dev/null 1:3 is one of mrun's own nodes: nothing to add.
  REQUIRE(c.linux_devices.empty());
  REQUIRE(c.process.umask == mode_t{022});
  // Another node at that path is the config's to ask for.
  REQUIRE(convert(with_null(5)).linux_devices.size() == 1);

  // ctr run --privileged: the host's block devices, with their modes and owners.
  auto all = convert(edited("crun-spec.json", [](json& j) {
    j["linux"]["devices"] = {
        {{"path", "/dev/loop0"},
         {"type", "b"},
         {"major", 7},
         {"minor", 0},
         {"fileMode", 0660 | 0060000},
         {"uid", 0},
         {"gid", 6}},
        {{"path", "/dev/net/tun"}, {"type", "u"}, {"major", 10}, {"minor", 200}},
        {{"path", "/run/fifo"}, {"type", "p"}}};
  }));
  using mrun::mount::ConfigDevice;
  REQUIRE(all.linux_devices == std::vector<ConfigDevice>{{"/dev/loop0", 'b', 7, 0, 0660, 0, 6},
                                                         {"/dev/net/tun", 'c', 10, 200, 0666, 0, 0},
                                                         {"/run/fifo", 'p', 0, 0, 0666, 0, 0}});

  auto fails = [](const json& device) {
    return error_of([&] {
      convert(edited("crun-spec.json", [&](json& j) { j["linux"]["devices"] = {device}; }));
    });
  };
  REQUIRE_THAT(fails({{"path", "/dev/x"}, {"type", "c"}}),
               Catch::Contains("needs major and minor"));
  REQUIRE_THAT(fails({{"path", "/dev/x"}, {"type", "q"}, {"major", 1}, {"minor", 1}}),
               Catch::Contains("linux.devices[0].type"));
  REQUIRE_THAT(fails({{"path", "dev/x"}, {"type", "c"}, {"major", 1}, {"minor", 1}}),
               Catch::Contains("linux.devices[0].path"));
  REQUIRE_THAT(fails({{"path", "/dev/x"}, {"type", "c"}, {"major", -1}, {"minor", 1}}),
               Catch::Contains("out of range"));
  REQUIRE_THAT(fails(5), Catch::Contains("linux.devices[0]: must be an object"));
}

TEST_CASE("what mrun cannot honour is an error naming the field, never ignored") {
  auto fails = [](const std::function<void(json&)>& edit) {
    return error_of([&] { convert(edited("crun-spec.json", edit)); });
  };
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["sysctl"] = {{"vm.swappiness", "1"}};
               }),
               Catch::Contains("linux.sysctl (vm.swappiness)"));
  REQUIRE_THAT(fails([](json& j) {  // net.* of the host's network namespace
                 j["linux"]["namespaces"] = {
                     {{"type", "pid"}}, {{"type", "ipc"}}, {{"type", "uts"}}, {{"type", "mount"}}};
                 j["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}};
               }),
               Catch::Contains("linux.sysctl (net.ipv4.ip_forward)"));
  REQUIRE_THAT(fails([](json& j) {
                 j["mounts"].push_back({{"destination", "/data"},
                                        {"type", "bind"},
                                        {"source", "/srv"},
                                        {"options", {"rbind", "idmap=uids=0-1-1"}}});
               }),
               Catch::Contains("mounts (bind on /data): option \"idmap=uids=0-1-1\""));
  REQUIRE_THAT(fails([](json& j) { j["linux"]["rootfsPropagation"] = "sideways"; }),
               Catch::Contains("linux.rootfsPropagation"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["namespaces"] = {{{"type", "pid"}}, {{"type", "mount"}}};
               }),
               Catch::Contains("needs a uts namespace of the container's own"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["resources"]["memory"] = {{"useHierarchy", false}};
               }),
               Catch::Contains("linux.resources.memory.useHierarchy"));
  REQUIRE_THAT(fails([](json& j) {
                 j["linux"]["intelRdt"] = {{"closID", "x"}};
               }),
               Catch::Contains("linux.intelRdt"));
  REQUIRE_THAT(fails([](json& j) {
                 j["process"]["rlimits"] = {{{"type", "RLIMIT_FLY"}, {"soft", 1}, {"hard", 1}}};
               }),
               Catch::Contains("process.rlimits: unknown rlimit"));
  REQUIRE_THAT(fails([](json& j) { j["process"]["oomScoreAdj"] = -1001; }),
               Catch::Contains("process.oomScoreAdj"));
}

TEST_CASE("the conversion reads only the config; what the host must have is checked at the start") {
  auto host_refuses = [](const std::function<void(json&)>& edit) {
    const auto config = convert(edited("crun-spec.json", edit));  // converts on any host
    return error_of([&] { runtime::check_host_supports(config); });
  };
  // An LSM label where that module is not enabled means nothing: refused, as runc does.
  if (!security::apparmor_enabled()) {
    REQUIRE_THAT(host_refuses([](json& j) { j["process"]["apparmorProfile"] = "x"; }),
                 Catch::Contains("process.apparmorProfile \"x\": AppArmor is not enabled"));
  }
  if (!security::selinux_enabled()) {
    REQUIRE_THAT(
        host_refuses([](json& j) { j["process"]["selinuxLabel"] = "system_u:system_r:c"; }),
        Catch::Contains("process.selinuxLabel"));
    // A mount label is ignored where SELinux is not enabled, as runc and crun do.
    REQUIRE(host_refuses([](json& j) { j["linux"]["mountLabel"] = "system_u:object_r:c"; }) == "");
  } else {
    REQUIRE_THAT(host_refuses([](json& j) { j["linux"]["mountLabel"] = "system_u:object_r:c"; }),
                 Catch::Contains("linux.mountLabel"));
  }
  // The label itself must be a string, as runc's parser requires, on any host.
  REQUIRE_THAT(error_of([] {
                 convert(edited("crun-spec.json", [](json& j) { j["linux"]["mountLabel"] = 7; }));
               }),
               Catch::Contains("linux.mountLabel: must be a string"));
  REQUIRE(convert(edited("crun-spec.json", [](json& j) {
            j["linux"]["mountLabel"] = "system_u:object_r:c";
          })).mount_label == "system_u:object_r:c");
}

TEST_CASE("the config's mounts are the container's, in order; annotations carry over") {
  auto spec = edited("crun-spec.json", [](json& j) {
    j["mounts"].push_back({{"destination", "/data"},
                           {"type", "bind"},
                           {"source", "/srv"},
                           {"options", {"rbind", "ro"}}});
    j["mounts"].push_back({{"destination", "/rel"}, {"source", "sub"}, {"options", {"bind"}}});
    j["mounts"].push_back({{"destination", "/run"},
                           {"type", "tmpfs"},
                           {"source", "tmpfs"},
                           {"options", {"nosuid", "mode=755"}}});
    j["linux"]["maskedPaths"].push_back("/etc/secret");
    j["annotations"] = {{"run.oci.keep_original_groups", "1"}, {"x", "y"}};
    j["linux"]["resources"]["memory"] = {{"limit", 1048576}};
    j["linux"]["resources"]["pids"] = {{"limit", 10}};
    j["linux"]["namespaces"].push_back({{"type", "cgroup"}});
  });
  auto c = convert(spec);
  const auto& mounts = c.mounts.mounts;
  REQUIRE(mounts.size() == spec.mounts->size());
  REQUIRE(mounts[mounts.size() - 3].source == "/srv");
  REQUIRE(mounts[mounts.size() - 2].source == "/bundle/sub");  // relative: the bundle's
  REQUIRE(mounts.back().destination == "/run");
  REQUIRE(std::count(c.mounts.masked_paths.begin(), c.mounts.masked_paths.end(), "/etc/secret") ==
          1);
  REQUIRE(c.mounts.read_only_root);
  REQUIRE(c.run.overlay == runtime::OverlayMode::none);  // root.path as it is
  REQUIRE(c.process.keep_groups);
  REQUIRE(c.annotations.at("x") == "y");
  REQUIRE(c.resources.memory.limit == 1048576);
  REQUIRE(c.resources.pids_limit == 10);
}

TEST_CASE("linux.namespaces: new, joined by path, or the caller's when absent") {
  auto c = convert(edited("crun-spec.json", [](json& j) {
    j["linux"]["namespaces"] = {{{"type", "mount"}},
                                {{"type", "uts"}},
                                {{"type", "network"}, {"path", "/run/netns/pod"}},
                                {{"type", "ipc"}, {"path", "/proc/42/ns/ipc"}}};
  }));
  REQUIRE(c.namespaces.pid.source == runtime::NamespaceSource::callers);
  REQUIRE(c.namespaces.uts.source == runtime::NamespaceSource::fresh);
  REQUIRE(c.namespaces.network.source == runtime::NamespaceSource::joined);
  REQUIRE(c.namespaces.network.path == "/run/netns/pod");
  REQUIRE(c.network == runtime::NetworkMode::none);
  REQUIRE(c.namespaces.ipc.path == "/proc/42/ns/ipc");
  REQUIRE(c.namespaces.cgroup.source == runtime::NamespaceSource::callers);
  auto host = convert(edited("crun-spec.json", [](json& j) {
    j["linux"]["namespaces"] = {{{"type", "mount"}}, {{"type", "pid"}}};
    j.erase("hostname");
  }));
  REQUIRE(host.network == runtime::NetworkMode::host);
  REQUIRE(host.hostname.empty());  // left as it is, not set to ""
}

TEST_CASE("a spec without noNewPrivileges or capabilities gets the spec's defaults") {
  auto c = convert(edited("crun-spec.json", [](json& j) {
    j["process"].erase("noNewPrivileges");
    j["process"].erase("capabilities");
  }));
  REQUIRE_FALSE(c.process.security.no_new_privileges);
  // No capabilities at all: every set empty (not mrun run's default set).
  REQUIRE(c.process.security.capability_sets);
  const auto& sets = *c.process.security.capability_sets;
  REQUIRE((sets.bounding.empty() && sets.effective.empty() && sets.permitted.empty() &&
           sets.inheritable.empty() && sets.ambient.empty()));
  REQUIRE(c.process.security.cap_add.empty());
}

TEST_CASE("process: additionalGids, the five capability sets, rlimits, oomScoreAdj as given") {
  // ctr's default spec (containerd 1.6): additionalGids from the image's /etc/group.
  auto c = convert(edited("runc-spec.json", [](json& j) {
    j["process"]["user"] = {{"uid", 1000}, {"gid", 1000}, {"additionalGids", {0, 10, 1000}}};
    j["process"]["capabilities"] = {{"bounding", {"CAP_KILL", "CAP_CHOWN", "CAP_NET_RAW"}},
                                    {"effective", {"CAP_KILL"}},
                                    {"permitted", {"CAP_KILL", "CAP_CHOWN"}},
                                    {"inheritable", {"CAP_CHOWN"}},
                                    {"ambient", {"CAP_CHOWN"}}};
    j["process"]["rlimits"] = {{{"type", "RLIMIT_NOFILE"}, {"soft", 100}, {"hard", 200}},
                               {{"type", "RLIMIT_CORE"}, {"soft", 0}, {"hard", 0}}};
    j["process"]["oomScoreAdj"] = 300;
    j["process"].erase("env");  // no HOME: the container's process sets it from passwd
  }));
  REQUIRE(
      (c.process.user.uid == 1000 && c.process.user.gid == 1000 && !c.process.user.gid_from_image));
  REQUIRE(c.process.user.additional_gids == std::vector<gid_t>{0, 10, 1000});
  const auto& sets = *c.process.security.capability_sets;
  REQUIRE(sets.bounding == std::vector<std::string>{"CAP_KILL", "CAP_CHOWN", "CAP_NET_RAW"});
  REQUIRE(sets.effective == std::vector<std::string>{"CAP_KILL"});
  REQUIRE(sets.permitted == std::vector<std::string>{"CAP_KILL", "CAP_CHOWN"});
  REQUIRE(sets.inheritable == std::vector<std::string>{"CAP_CHOWN"});
  REQUIRE(sets.ambient == std::vector<std::string>{"CAP_CHOWN"});
  REQUIRE(c.process.rlimits.size() == 2);
  REQUIRE((c.process.rlimits[0].type == "RLIMIT_NOFILE" && c.process.rlimits[0].soft == 100 &&
           c.process.rlimits[0].hard == 200));
  REQUIRE((c.process.rlimits[1].type == "RLIMIT_CORE" && c.process.rlimits[1].hard == 0));
  REQUIRE(c.process.oom_score_adj == 300);
  REQUIRE(std::none_of(c.process.env.begin(), c.process.env.end(),
                       [](const std::string& e) { return e.rfind("HOME=", 0) == 0; }));
}

TEST_CASE("ctr's unmodified default spec converts whole: mounts, namespaces, rootfs as is") {
  for (const char* name : {"configs/ctr-default.json", "configs/ctr-net-host.json",
                           "configs/ctr-tty-read-only-mount-with-ns.json"}) {
    INFO(name);
    auto c = convert(oci::parse_spec(fixture(name)), 0);
    REQUIRE(c.run.overlay == runtime::OverlayMode::none);
    const auto& mounts = c.mounts.mounts;
    REQUIRE(std::any_of(mounts.begin(), mounts.end(), [](const mount::ConfigMount& m) {
      return m.destination == "/run" && m.type == "tmpfs";
    }));
    REQUIRE(c.hostname.empty());  // ctr sends none: the UTS namespace's stays
    REQUIRE(c.namespaces.pid.source == runtime::NamespaceSource::fresh);
  }
  auto with_ns =
      convert(oci::parse_spec(fixture("configs/ctr-tty-read-only-mount-with-ns.json")), 0);
  REQUIRE(with_ns.namespaces.network.source == runtime::NamespaceSource::joined);
  auto host = convert(oci::parse_spec(fixture("configs/ctr-net-host.json")), 0);
  REQUIRE(host.network == runtime::NetworkMode::host);
}

TEST_CASE("a mount's own uidMappings and gidMappings: idmapped binds, round-tripped") {
  auto spec = edited("runc-spec.json", [](json& j) {
    j["mounts"].push_back({{"destination", "/data"},
                           {"type", "bind"},
                           {"source", "/srv"},
                           {"options", {"rbind", "idmap"}},
                           {"uidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}},
                           {"gidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}},
                           {"x-unknown", 1}});
  });
  REQUIRE(oci::to_json(oci::parse_spec(oci::to_json(spec).dump())) == oci::to_json(spec));
  REQUIRE(oci::to_json(spec)["mounts"].back()["x-unknown"] == 1);  // kept, as the spec asks
  auto c = convert(spec, 0);
  REQUIRE(c.mounts.mounts.back().uid_mappings == std::vector<userns::IdMapEntry>{{0, 1000, 1}});
  auto fails = [](const std::function<void(json&)>& edit) {
    return error_of([&] { convert(edited("runc-spec.json", edit), 0); });
  };
  REQUIRE_THAT(fails([](json& j) {
                 j["mounts"].push_back(
                     {{"destination", "/d"},
                      {"type", "bind"},
                      {"source", "/srv"},
                      {"options", {"rbind"}},
                      {"uidMappings", {{{"containerID", 0}, {"hostID", 1}, {"size", 1}}}},
                      {"gidMappings", {{{"containerID", 0}, {"hostID", 1}, {"size", 1}}}}});
               }),
               Catch::Contains("need the idmap or ridmap option"));
  REQUIRE_THAT(fails([](json& j) {
                 j["mounts"].push_back(
                     {{"destination", "/d"},
                      {"type", "bind"},
                      {"source", "/srv"},
                      {"options", {"rbind", "idmap"}},
                      {"uidMappings", {{{"containerID", 0}, {"hostID", 1}, {"size", 1}}}}});
               }),
               Catch::Contains("both uidMappings and gidMappings"));
}

TEST_CASE("linux.personality and linux.memoryPolicy as set_mempolicy and personality take them") {
  auto c = convert(edited("runc-spec.json", [](json& j) {
    j["linux"]["personality"] = {{"domain", "LINUX32"}};
    j["linux"]["memoryPolicy"] = {
        {"mode", "MPOL_INTERLEAVE"}, {"nodes", "0-2,5,64"}, {"flags", {"MPOL_F_STATIC_NODES"}}};
  }));
  REQUIRE(c.process.personality == 0x0008UL);
  REQUIRE(c.process.memory_policy->mode == 3);
  REQUIRE(c.process.memory_policy->flags == 1u << 15);
  REQUIRE(c.process.memory_policy->nodemask == std::vector<unsigned long>{0x27UL, 0x1UL});
  auto local = convert(edited("runc-spec.json", [](json& j) {
    j["linux"]["memoryPolicy"] = {{"mode", "MPOL_LOCAL"}};
  }));
  REQUIRE(local.process.memory_policy->nodemask.empty());
  REQUIRE_THAT(error_of([] {
                 convert(edited("runc-spec.json", [](json& j) {
                   j["linux"]["memoryPolicy"] = {{"mode", "MPOL_BIND"}, {"nodes", "3-1"}};
                 }));
               }),
               Catch::Contains("not a list of NUMA nodes"));
}

TEST_CASE("podman 4.3's configs convert whole, rootful and rootless, default network or none") {
  for (const char* mode : {"rootful", "rootless"}) {
    for (const char* network : {"default", "network-none"}) {
      const std::string name = std::string("configs/podman-") + mode + "-" + network + ".json";
      INFO(name);
      // Rootless podman runs the runtime as root of the user namespace it made.
      auto c = convert(oci::parse_spec(fixture(name)), 0);
      REQUIRE(c.run.overlay == runtime::OverlayMode::none);
      REQUIRE(c.process.args == std::vector<std::string>{"true"});
      REQUIRE(c.process.umask == mode_t{022});
      REQUIRE(c.process.rlimits.size() == 2);
      REQUIRE(c.process.security.seccomp == security::SeccompMode::file);  // podman's own profile
      REQUIRE(c.process.security.no_new_privileges == false);
      REQUIRE(c.namespaces.pid.source == runtime::NamespaceSource::fresh);
      // Its default network is a namespace podman made (netavark or slirp4netns), joined.
      auto want = std::string(network) == "default" ? runtime::NamespaceSource::joined
                                                    : runtime::NamespaceSource::fresh;
      REQUIRE(c.namespaces.network.source == want);
      const auto& mounts = c.mounts.mounts;
      REQUIRE(std::any_of(mounts.begin(), mounts.end(), [](const mount::ConfigMount& m) {
        return m.destination == "/dev/shm" && m.type == "bind";  // podman's own /dev/shm
      }));
      REQUIRE(c.annotations.at("io.container.manager") == "libpod");
      // And the whole table plans (the options are all ones mrun takes).
      REQUIRE_NOTHROW(mount::plan_config_mounts(c.mounts));
    }
  }
}

TEST_CASE("containerd's CRI plugin's configs convert whole: a pod's sandbox and containers") {
  // configs/cri-*.json: what containerd 1.6's CRI plugin wrote for tests/cri/pod_test.py's
  // pod on cgroup v2 (configs/README.md).
  auto sandbox = convert(oci::parse_spec(fixture("configs/cri-sandbox.json")), 0);
  REQUIRE(sandbox.process.args == std::vector<std::string>{"/pause"});
  REQUIRE(sandbox.process.oom_score_adj == -998);  // the kubelet's for a sandbox
  REQUIRE(sandbox.hostname == "web-runc");
  REQUIRE(sandbox.read_only);
  REQUIRE((sandbox.process.user.uid == 1000 && sandbox.process.user.gid == 1000));
  REQUIRE(sandbox.namespaces.pid.source == runtime::NamespaceSource::fresh);
  REQUIRE(sandbox.namespaces.ipc.source == runtime::NamespaceSource::fresh);
  REQUIRE(sandbox.namespaces.uts.source == runtime::NamespaceSource::fresh);
  // The pod's network namespace: the one CNI set up, bind-mounted by containerd.
  REQUIRE(sandbox.namespaces.network.source == runtime::NamespaceSource::joined);
  REQUIRE(sandbox.namespaces.network.path.find("/netns/cni-") != std::string::npos);
  REQUIRE(sandbox.resources.cpu.shares == 2u);
  REQUIRE(sandbox.process.security.seccomp ==
          security::SeccompMode::file);  // RuntimeDefault, inline
  REQUIRE(sandbox.mounts.masked_paths.size() == 10);
  REQUIRE(sandbox.mounts.readonly_paths.size() == 5);
  // The cgroup is the one cgroupsPath names, as the kubelet expects it.
  REQUIRE(sandbox.run.cgroup_parent ==
          "kubepods/burstable/pod3b2db340-0927-4986-bf81-21c3d28547e5");
  REQUIRE(sandbox.run.cgroup_leaf ==
          "18f9476ec322837135a1602f44822e0e42d90cc63b63c3305ed8408d74c61bd6");
  REQUIRE_NOTHROW(mount::plan_config_mounts(sandbox.mounts));

  for (const char* name :
       {"configs/cri-container-server.json", "configs/cri-container-client.json"}) {
    INFO(name);
    auto c = convert(oci::parse_spec(fixture(name)), 0);
    // Every namespace but mount and cgroup is the sandbox's, joined by path.
    for (const auto* ns :
         {&c.namespaces.pid, &c.namespaces.ipc, &c.namespaces.uts, &c.namespaces.network}) {
      REQUIRE(ns->source == runtime::NamespaceSource::joined);
      REQUIRE(ns->path.rfind("/proc/", 0) == 0);
    }
    REQUIRE(c.namespaces.mount.source == runtime::NamespaceSource::fresh);
    REQUIRE(c.namespaces.cgroup.source == runtime::NamespaceSource::fresh);
    REQUIRE(c.process.user.additional_gids == std::vector<gid_t>{1000, 2000});  // fsGroup
    REQUIRE(c.process.security.no_new_privileges);
    REQUIRE(c.process.security.capability_sets->bounding ==
            std::vector<std::string>{"CAP_NET_BIND_SERVICE"});
    REQUIRE(c.process.oom_score_adj == 968);
    REQUIRE(c.read_only);
    REQUIRE(c.resources.memory.limit == 128 * 1024 * 1024);
    REQUIRE((c.resources.cpu.quota == 50000 && c.resources.cpu.period == 100000u));
    REQUIRE(c.run.cgroup_parent == "kubepods/burstable/pod3b2db340-0927-4986-bf81-21c3d28547e5");
    const auto& mounts = c.mounts.mounts;
    for (const char* dst : {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/dev/shm",
                            "/dev/termination-log", "/data"}) {
      INFO(dst);
      REQUIRE(std::any_of(mounts.begin(), mounts.end(), [&](const mount::ConfigMount& m) {
        return m.destination == dst && m.type == "bind";
      }));
    }
    REQUIRE_NOTHROW(mount::plan_config_mounts(c.mounts));
  }
}

TEST_CASE("containerd's CRI plugin's config of a GPU pod's container converts whole") {
  // configs/cri-container-gpu.json: CreateContainer with a device plugin's answer for
  // fakegpu0 (tests/cri/gpu_pod.py), as containerd 1.6 wrote it in the VM with the
  // module loaded (major 246 there). The nodes come from linux.devices (the host's
  // numbers, mode and owner), their rw rules from linux.resources.devices after the
  // deny-all, and the driver library and client as read-only binds.
  auto c = convert(oci::parse_spec(fixture("configs/cri-container-gpu.json")), 0);
  using mrun::mount::ConfigDevice;
  REQUIRE(c.linux_devices ==
          std::vector<ConfigDevice>{{"/dev/fakegpu0", 'c', 246, 0, 0600, 0, 0},
                                    {"/dev/fakegpuctl", 'c', 246, 255, 0600, 0, 0}});
  const std::uint32_t rw = cgroup::access_read | cgroup::access_write;
  REQUIRE(c.device_rules ==
          std::vector<cgroup::DeviceRule>{{cgroup::DeviceType::character, 246, 0, rw},
                                          {cgroup::DeviceType::character, 246, 255, rw}});
  const auto& mounts = c.mounts.mounts;
  for (const char* dst : {"/opt/fakegpu/lib/libfakegpu.so.1", "/opt/fakegpu/bin/fakegpu-client"}) {
    INFO(dst);
    REQUIRE(std::any_of(mounts.begin(), mounts.end(), [&](const mount::ConfigMount& m) {
      return m.destination == dst && m.type == "bind" &&
             std::find(m.options.begin(), m.options.end(), "ro") != m.options.end();
    }));
  }
  REQUIRE(std::find(c.process.env.begin(), c.process.env.end(),
                    "LD_LIBRARY_PATH=/opt/fakegpu/lib") != c.process.env.end());
  REQUIRE_NOTHROW(mount::plan_config_mounts(c.mounts));
}
