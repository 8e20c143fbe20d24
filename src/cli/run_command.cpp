// mrun run [OPTIONS] [ROOTFS] [--] [CMD [ARG...]]   -- see mrun-run(1)
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cdi/cdi_registry.hpp"
#include "cgroup/limits.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "launch/detach.hpp"
#include "launch/launcher.hpp"
#include "lifecycle/lifecycle.hpp"
#include "mount/busybox_rootfs.hpp"
#include "mount/mount_plan.hpp"
#include "net/publish_spec.hpp"
#include "oci/run_config.hpp"
#include "runtime/privilege.hpp"
#include "security/security_plan.hpp"
#include "sys/fs.hpp"
#include "userns/caller.hpp"

namespace mrun::cli {

namespace {

constexpr const char* default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct RunOptions {
  std::string name;
  bool remove = false;
  bool detach = false;
  bool tty = false;
  std::vector<std::string> env;
  std::string workdir = "/";
  std::string user;
  std::string hostname;
  std::vector<std::string> volumes;
  bool read_only = false;
  std::string overlay = "auto";
  std::string userns = "auto";
  std::string network;  // empty: slirp4netns when installed, else none
  std::vector<std::string> publish;
  bool allow_host_loopback = false;
  bool init = false;
  std::vector<std::string> security_opts;  // seccomp=..., no-new-privileges[=...]
  std::vector<std::string> cap_add;
  std::vector<std::string> cap_drop;
  bool privileged = false;
  std::string memory;       // --memory SIZE
  std::string memory_swap;  // --memory-swap SIZE|-1
  std::string pids_limit;   // --pids-limit N
  std::string cpus;         // --cpus N
  std::string cgroup_parent;
  std::string cgroups = "enabled";
  std::vector<std::string> devices;        // --device HOSTPATH[:CTRPATH][:rwm] or a CDI name
  std::vector<std::string> cdi_spec_dirs;  // --cdi-spec-dir: instead of /etc/cdi, /var/run/cdi
  std::string gpu;                         // --gpu all|N,... (a bare --gpu is rewritten to all)
  bool keep_groups = false;
  std::vector<std::string> group_add;  // --group-add GID (numeric), or keep-groups
  std::string device_filter = "auto";  // --device-filter auto|required|off
  std::string bundle;                  // --bundle: an OCI bundle; the one positional word is the ID
};

// --gpu's value is optional: "--gpu ROOTFS" must not swallow the rootfs.
bool is_gpu_list(const std::string& word) {
  if (word == "all") return true;
  if (word.empty()) return false;
  return word.find_first_not_of("0123456789,") == std::string::npos;
}

// --memory and friends as linux.resources, checked here so a typo fails before anything
// starts.
cgroup::Resources parse_limits(const RunOptions& options) {
  cgroup::Limits limits;
  if (!options.memory.empty()) {
    limits.memory = cgroup::parse_size(options.memory);
    if (!limits.memory)
      throw Error("--memory \"" + options.memory + "\" is not a size", EINVAL,
                  "use bytes or a number with k, m, g (binary units): --memory 100m");
  }
  if (!options.memory_swap.empty()) {
    limits.memory_swap = cgroup::parse_swap(options.memory_swap);
    if (!limits.memory_swap)
      throw Error("--memory-swap \"" + options.memory_swap + "\" is not a size", EINVAL,
                  "use a size (memory plus swap, e.g. 200m) or -1 for unlimited swap");
  }
  if (!options.pids_limit.empty()) {
    auto pids = parse_u64(options.pids_limit);
    if (!pids || *pids == 0)
      throw Error("--pids-limit \"" + options.pids_limit + "\" is not a positive number", EINVAL,
                  "use --pids-limit N with N >= 1");
    limits.pids = *pids;
  }
  if (!options.cpus.empty()) {
    limits.cpus = cgroup::parse_cpus(options.cpus);
    if (!limits.cpus) {
      // A number, but out of range, deserves its own words: "5000" is a number.
      const bool number = !options.cpus.empty() &&
                          options.cpus.find_first_not_of("0123456789.") == std::string::npos;
      throw Error(number ? "--cpus " + options.cpus + " is out of range (more than 0, at most 1024)"
                         : "--cpus \"" + options.cpus + "\" is not a number of CPUs",
                  EINVAL, "use a positive number of CPUs, e.g. --cpus 0.5 or --cpus 2");
    }
  }
  auto resources = cgroup::to_resources(limits);  // throws on an invalid combination
  cgroup::plan_resource_files(resources);
  return resources;
}

std::string absolute_path(const std::string& path, const std::string& what) {
  auto resolved = sys::real_path(path);
  if (!resolved) {
    throw Error(what + " " + path + " does not exist", errno,
                what == "rootfs" ? "give an existing rootfs directory, or omit it to use the "
                                   "built-in busybox rootfs"
                                 : "create it first");
  }
  return *resolved;
}

// UID[:GID]. Without GID: the user's primary group from the image's /etc/passwd, else 0,
// looked up by the container itself (mrun reads nothing of the rootfs).
runtime::UserSpec parse_user(const std::string& spec) {
  runtime::UserSpec user;
  auto parts = split(spec, ':');
  const std::string fix = "use -u UID[:GID] with numeric ids";
  auto uid = parts.empty() ? std::nullopt : parse_u64(parts[0]);
  if (parts.size() > 2 || !uid || *uid > 0xfffffffeULL) {
    throw Error("user \"" + spec + "\" is not UID[:GID]", EINVAL, fix);
  }
  user.uid = static_cast<uid_t>(*uid);
  if (parts.size() == 2) {
    auto gid = parse_u64(parts[1]);
    if (!gid || *gid > 0xfffffffeULL)
      throw Error("group in \"" + spec + "\" is not numeric", EINVAL, fix);
    user.gid = static_cast<gid_t>(*gid);
    return user;
  }
  user.gid_from_image = true;
  return user;
}

// As podman: a user-mode network by default when slirp4netns is there to provide it.
runtime::NetworkMode choose_network(const std::string& requested, const runtime::Context& ctx) {
  if (!requested.empty()) return *runtime::parse_network_mode(requested);
  if (!sys::find_program("slirp4netns").empty()) {
    return runtime::NetworkMode::slirp4netns;
  }
  ctx.log.warn(
      "slirp4netns is not installed: no network (--network=none); install it, or "
      "pass --network explicitly");
  return runtime::NetworkMode::none;
}

// No HOME: the container's process sets it from the image's /etc/passwd entry of its
// uid, or "/" (init/become_command.hpp), as runc and podman do; -e HOME=... wins.
std::vector<std::string> build_env(const RunOptions& options, const std::string& hostname) {
  std::vector<std::string> env{std::string("PATH=") + default_path, "HOSTNAME=" + hostname};
  if (options.tty) env.emplace_back("TERM=xterm");
  for (const auto& entry : options.env) {
    std::string key = entry.substr(0, entry.find('='));
    if (key.empty())
      throw Error("environment entry \"" + entry + "\" has no name", EINVAL, "use -e KEY=VALUE");
    std::string value;
    if (entry.find('=') == std::string::npos) {
      // -e KEY: pass the caller's value through, as podman does; skip when unset.
      const char* host = std::getenv(key.c_str());
      if (host == nullptr) continue;
      value = key + "=" + host;
    } else {
      value = entry;
    }
    std::erase_if(env, [&](const std::string& e) { return starts_with(e, key + "="); });
    env.push_back(value);
  }
  return env;
}

class RunCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* run = app.add_subcommand("run", "run a command in a new container");
    run->add_option("--name", options_.name, "container name (default: mrun-XXXXXXXX)");
    run->add_flag("--rm", options_.remove, "remove the container when it exits");
    run->add_flag("-d,--detach", options_.detach, "run in the background and print the name");
    run->add_flag("-t,--tty", options_.tty, "allocate a pseudo-terminal");
    run->add_option("-e,--env", options_.env, "set KEY=VALUE (or pass KEY through)")->take_all();
    run->add_option("-w,--workdir", options_.workdir, "working directory inside the container");
    run->add_option("-u,--user", options_.user, "UID[:GID] to run the command as");
    run->add_option("--hostname", options_.hostname, "hostname (default: the container name)");
    run->add_option("-v,--volume", options_.volumes, "bind mount SRC:DST[:ro|rw]")->take_all();
    run->add_flag("--read-only", options_.read_only, "mount the root filesystem read-only");
    run->add_option("--overlay", options_.overlay, "auto|native|fuse|none")
        ->check(CLI::IsMember({"auto", "native", "fuse", "none"}));
    run->add_option("--userns", options_.userns, "auto|private|single")
        ->check(CLI::IsMember({"auto", "private", "single"}));
    run->add_option("--network", options_.network,
                    "slirp4netns|pasta|bridge|none|host (default: slirp4netns when installed)")
        ->check(CLI::IsMember({"slirp4netns", "pasta", "bridge", "none", "host"}));
    run->add_option("-p,--publish", options_.publish,
                    "publish [IP:]HOSTPORT:CTRPORT[/tcp|/udp] (slirp4netns, pasta, bridge)")
        ->take_all();
    run->add_flag("--allow-host-loopback", options_.allow_host_loopback,
                  "let 10.0.2.2 reach the host's 127.0.0.1 (slirp4netns, pasta)");
    run->add_flag("--init", options_.init, "run mrun's reaper as PID 1");
    run->add_option("--security-opt", options_.security_opts,
                    "seccomp=PATH|unconfined, no-new-privileges[=true|false]")
        ->take_all();
    run->add_option("--cap-add", options_.cap_add, "add capabilities (NAME[,NAME...] or ALL)")
        ->take_all();
    run->add_option("--cap-drop", options_.cap_drop, "drop capabilities (NAME[,NAME...] or ALL)")
        ->take_all();
    run->add_flag("--privileged", options_.privileged,
                  "every capability of the container's user namespace, no seccomp filter");
    run->add_option("-m,--memory", options_.memory, "memory limit, e.g. 100m, 1g (memory.max)");
    run->add_option("--memory-swap", options_.memory_swap,
                    "memory plus swap limit, or -1 for unlimited swap (memory.swap.max)");
    run->add_option("--pids-limit", options_.pids_limit, "most processes at once (pids.max)");
    run->add_option("--cpus", options_.cpus, "CPU time, in CPUs, e.g. 0.5 (cpu.max)");
    run->add_option("--cgroup-parent", options_.cgroup_parent,
                    "parent cgroup, relative to the cgroup2 root");
    run->add_option("--cgroups", options_.cgroups, "enabled|disabled")
        ->check(CLI::IsMember({"enabled", "disabled"}));
    run->add_option("--device", options_.devices,
                    "add a host device HOSTPATH[:CTRPATH][:rwm], or a CDI device VENDOR/CLASS=NAME")
        ->take_all();
    run->add_option("--cdi-spec-dir", options_.cdi_spec_dirs,
                    "read CDI specs from DIR instead of /etc/cdi and /var/run/cdi (repeatable)")
        ->take_all();
    run->add_option("--gpu", options_.gpu,
                    "the fakegpu devices (all, or N[,N...]) and their user-space driver");
    run->add_flag("--keep-groups", options_.keep_groups,
                  "keep the caller's supplementary groups (no setgroups)");
    run->add_option("--group-add", options_.group_add,
                    "a supplementary group GID (numeric) for the command; keep-groups: as "
                    "--keep-groups");
    run->add_option("--device-filter", options_.device_filter,
                    "auto|required|off: the cgroup device filter (default auto)")
        ->check(CLI::IsMember({"auto", "required", "off"}));
    run->add_option("--bundle", options_.bundle, "run the OCI bundle DIR; the argument is the ID");
    run->add_flag("--print-config", print_config_,
                  "print the runtime-spec config.json these flags build, and run nothing");
    add_process_options(run, process_);
    // ROOTFS, "--" and the command are taken verbatim: options after ROOTFS belong
    // to the command.
    run_ = run;
    return run;
  }

  int preserved_fds() const override { return process_.preserve_fds; }

  int execute(const runtime::GlobalOptions& global) override {
    runtime::Context ctx = runtime::make_context(global);
    // --bundle: config.json, not the flags, says what to run (mrun-oci(1)); without it
    // the flags build such a config (oci/run_config.hpp). Either way the same
    // conversion and the same launcher run it.
    runtime::ContainerConfig config;
    if (!options_.bundle.empty()) {
      config = bundle_config(ctx);
      apply_process_options(process_, config, config.run.detach);
    } else {
      oci::RunConfig built = oci::build_run_config(build_request(ctx), run_policy());
      if (print_config_) {
        std::cout << oci::to_json(built.spec).dump(2) << "\n";
        return 0;
      }
      config = oci::to_container_config(built.spec, {}, name_, ::getuid(), ::getgid(), ctx.log,
                                        built.additions);
      runtime::validate(config);
      if (!process_.console_socket.empty() && !config.process.terminal) {
        throw Error("--console-socket needs a terminal", EINVAL, "add -t");
      }
      config.console_socket = process_.console_socket;
      config.preserve_fds = process_.preserve_fds;
      config.no_pivot = process_.no_pivot;
      config.new_keyring = !process_.no_new_keyring;
    }
    if (config.run.detach) return runtime::run_detached(config, ctx);
    const int status = runtime::run_container(config, ctx);
    // As runc run: a bundle's container run in the foreground is deleted once it exits,
    // its poststop hooks with it (with --rm it is gone already).
    if (!options_.bundle.empty() && !config.run.remove_on_exit) {
      runtime::delete_container(ctx, config.name, false);
    }
    return status;
  }

 private:
  runtime::ContainerConfig bundle_config(const runtime::Context& ctx) {
    if (trailing_.size() != 1) {
      throw Error("mrun run --bundle DIR takes exactly one argument, the container ID", EINVAL);
    }
    auto config = config_from_bundle(options_.bundle, trailing_[0], ctx);
    config.run.detach = options_.detach;
    config.run.remove_on_exit = options_.remove;
    config.run.device_filter = *runtime::parse_device_filter_mode(options_.device_filter);
    return config;
  }

  // What the config's capability sets start from: caps.conf (or $MRUN_POLICY_DIR's).
  oci::RunPolicy run_policy() const {
    oci::RunPolicy policy;
    const security::PolicyText text = security::default_policy();
    policy.default_caps = security::parse_caps_conf(text.caps_conf, text.caps_origin);
    policy.all_caps = security::all_capabilities(security::kernel_last_capability());
    policy.rootful =
        runtime::privilege_model_for(::getuid(), nullptr, userns::in_initial_user_namespace())
            .rootful;
    return policy;
  }

  oci::RunRequest build_request(const runtime::Context& ctx) {
    const std::vector<std::string>& rest = trailing_;
    std::string rootfs;
    std::vector<std::string> command;
    std::size_t i = 0;
    if (i < rest.size() && rest[i] != "--") rootfs = rest[i++];
    if (i < rest.size() && rest[i] == "--") ++i;
    command.assign(rest.begin() + static_cast<std::ptrdiff_t>(i), rest.end());

    oci::RunRequest config;
    config.rootfs =
        rootfs.empty() ? mount::default_rootfs(ctx.data_root) : absolute_path(rootfs, "rootfs");
    config.args = command.empty() ? std::vector<std::string>{"/bin/sh"} : command;
    config.name = options_.name.empty() ? runtime::generated_container_name() : options_.name;
    name_ = config.name;
    config.hostname = options_.hostname.empty() ? config.name : options_.hostname;
    config.workdir = options_.workdir;
    if (!options_.user.empty()) config.user = parse_user(options_.user);
    config.env = build_env(options_, config.hostname);
    for (const auto& spec : options_.volumes) {
      auto volume = mount::parse_volume(spec);
      config.volumes.push_back(
          {absolute_path(volume.source, "volume source"), volume.destination, volume.read_only});
    }
    config.read_only = options_.read_only;
    config.tty = options_.tty;
    config.network = choose_network(options_.network, ctx);
    runtime::RunAdditions& run = config.additions;
    run.overlay = *runtime::parse_overlay_mode(options_.overlay);
    run.userns = options_.userns == "single"    ? runtime::UsernsMode::single
                 : options_.userns == "private" ? runtime::UsernsMode::private_namespace
                                                : runtime::UsernsMode::automatic;
    for (const auto& spec : options_.publish) run.publish.push_back(net::parse_publish(spec));
    run.allow_host_loopback = options_.allow_host_loopback;
    runtime::check_network_options(config.network, !run.publish.empty(), run.allow_host_loopback);
    run.init = options_.init;
    run.detach = options_.detach;
    run.remove_on_exit = options_.remove;
    for (const auto& opt : options_.security_opts)
      security::apply_security_opt(config.security, opt);
    // podman accepts comma-separated lists: --cap-add NET_ADMIN,SYS_TIME.
    for (const auto& list : options_.cap_add) {
      for (const auto& cap : split(list, ',')) config.security.cap_add.push_back(cap);
    }
    for (const auto& list : options_.cap_drop) {
      for (const auto& cap : split(list, ',')) config.security.cap_drop.push_back(cap);
    }
    config.security.privileged = options_.privileged;
    config.resources = parse_limits(options_);
    run.cgroups = options_.cgroups == "disabled" ? runtime::CgroupsMode::disabled
                                                 : runtime::CgroupsMode::enabled;
    run.cgroup_parent = options_.cgroup_parent;
    std::vector<cdi::QualifiedName> cdi_devices;
    for (const auto& spec : options_.devices) {
      if (auto name = cdi::parse_qualified_name(spec)) {
        cdi_devices.push_back(*name);
      } else {
        run.devices.push_back(mount::parse_device(spec));
      }
    }
    // CDI names end as --device, -v and -e entries: the same path into the config.
    cdi::apply_devices(cdi_devices, options_.cdi_spec_dirs, config, ctx.log);
    if (!options_.gpu.empty()) run.gpu = mount::parse_gpu(options_.gpu);
    config.keep_groups = options_.keep_groups;
    for (const auto& group : options_.group_add) {
      if (group == "keep-groups") {
        config.keep_groups = true;
        continue;
      }
      auto gid = parse_u64(group);
      if (!gid || *gid > 0xfffffffeULL) {
        throw Error("--group-add \"" + group + "\" is not a numeric gid", EINVAL,
                    "give a number (names are not looked up), or keep-groups");
      }
      config.user.additional_gids.push_back(static_cast<gid_t>(*gid));
    }
    if (config.keep_groups && !config.user.additional_gids.empty()) {
      throw Error("--group-add GID cannot be combined with keep-groups", EINVAL,
                  "the caller's groups are kept as they are then (as podman refuses it)");
    }
    run.device_filter = *runtime::parse_device_filter_mode(options_.device_filter);
    return config;
  }

  // [ROOTFS] [--] [CMD [ARG...]]: everything from the first word that is not an option
  // of ours (or from "--") on. Options after ROOTFS belong to the command, so these
  // words never reach CLI11.
  void take_trailing(std::vector<std::string>& args) override {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& word = args[i];
      if (word == "--" || word.empty() || word[0] != '-' || word == "-") {
        trailing_.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        args.resize(i);
        return;
      }
      if (word.find('=') != std::string::npos && word.rfind("--", 0) == 0) continue;  // --opt=value
      if (word == "--gpu" && (i + 1 >= args.size() || !is_gpu_list(args[i + 1]))) {
        args[i] = "--gpu=all";  // bare --gpu: every device
        continue;
      }
      std::string name = word.rfind("--", 0) == 0 ? word : word.substr(0, 2);
      const CLI::Option* option = run_->get_option_no_throw(name);
      bool takes_value = option != nullptr && option->get_expected_max() != 0;  // flags expect 0
      // "-eKEY=V" carries its value; "-dt" is a bundle of flags.
      if (takes_value && (word.rfind("--", 0) == 0 || word.size() == 2)) ++i;
    }
  }

  RunOptions options_;
  ProcessOptions process_;
  bool print_config_ = false;
  std::string name_;
  std::vector<std::string> trailing_;
  CLI::App* run_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_run_command() {
  return std::make_unique<RunCommand>();
}

}  // namespace mrun::cli
