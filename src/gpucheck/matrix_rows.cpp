#include "gpucheck/matrix_rows.hpp"

#include "gpucheck/outcome.hpp"

namespace mrun::gpucheck {

std::string to_string(Mode mode) {
  return mode == Mode::rootful ? "rootful" : "rootless";
}

namespace {

using Args = std::vector<std::string>;

// The parts every run shares: removed on exit, no network (nothing here needs one).
Args base() {
  return {"run", "--rm", "--network", "none"};
}

Args operator+(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --gpu injects the clients under /opt/fakegpu/bin; without it the static client is
// bound in on its own.
constexpr const char* injected_static = "/opt/fakegpu/bin/fakegpu-client-static";
constexpr const char* bound_static = "/fakegpu-client-static";

// The dynamic client needs the C and C++ runtime: the host's, read-only (the busybox
// rootfs has none). libfakegpu is not among them: it is the part --gpu injects.
Args host_libc() {
  return {"-v", "/usr/lib:/usr/lib:ro", "-v", "/usr/lib:/lib:ro", "-v", "/usr/lib64:/lib64:ro"};
}

Run make_run(Mode mode, Args args, std::string step, std::string err, std::vector<Need> needs,
             std::string label = {}) {
  Run r;
  r.mode = mode;
  r.args = std::move(args);
  r.expect_step = std::move(step);
  r.expect_errno = std::move(err);
  r.needs = std::move(needs);
  r.label = std::move(label);
  return r;
}

}  // namespace

std::vector<RowSpec> matrix_rows(const MatrixPaths& p) {
  const Args client_static = {"-v", p.client_static + ":" + bound_static + ":ro"};
  const std::string passed = step_passed;
  const auto M = Need::module;
  std::vector<RowSpec> rows;

  RowSpec r1;
  r1.id = 1;
  r1.configuration = "node not injected";
  r1.breaks = "no /dev/fakegpu0 in the container (requirement 1: the node)";
  r1.fixes = "inject it: --gpu or --device /dev/fakegpu0";
  r1.run = make_run(Mode::rootful, base() + client_static + Args{p.rootfs, bound_static}, "open",
                    "ENOENT", {M});
  r1.fix = make_run(Mode::rootful,
                    base() + Args{"--device", "/dev/fakegpu0"} + client_static +
                        Args{p.rootfs, bound_static, "--check", "open"},
                    passed, "", {M}, "--device /dev/fakegpu0");
  rows.push_back(r1);

  RowSpec r2;
  r2.id = 2;
  r2.configuration = "node injected, no user-space library";
  r2.breaks =
      "fakegpu-client cannot start: libfakegpu.so.1 is not in the container (requirement 2: "
      "the host's user-space driver)";
  r2.fixes = "--gpu binds the host's libfakegpu read-only under /opt/fakegpu";
  r2.run = make_run(Mode::rootful,
                    base() +
                        Args{"--device", "/dev/fakegpu0", "--device", "/dev/fakegpuctl", "-v",
                             p.client_dynamic + ":/fakegpu-client:ro"} +
                        host_libc() + Args{p.rootfs, "/fakegpu-client"},
                    "load libraries", "ENOENT", {M});
  r2.fix = make_run(Mode::rootful,
                    base() + Args{"--gpu"} + host_libc() + Args{p.rootfs, "fakegpu-client"}, passed,
                    "", {M}, "--gpu");
  rows.push_back(r2);

  RowSpec r3;
  r3.id = 3;
  r3.configuration = "node + libraries + device filter allowing it";
  r3.breaks = "nothing: the three requirements are met (node, libraries, the shared driver)";
  r3.fixes = "-";
  r3.run = make_run(Mode::rootful,
                    base() + Args{"--gpu", "--device-filter", "required"} + host_libc() +
                        Args{p.rootfs, "fakegpu-client"},
                    passed, "", {M});
  rows.push_back(r3);

  RowSpec r4;
  r4.id = 4;
  r4.configuration = "node bound in, device filter omitting it";
  r4.breaks = "open is refused by the cgroup's device filter: the cgroup is the policy";
  r4.fixes = "allow it: --gpu or --device adds the node to the filter";
  r4.run =
      make_run(Mode::rootful,
               base() + Args{"--device-filter", "required", "-v", "/dev/fakegpu0:/dev/fakegpu0"} +
                   client_static + Args{p.rootfs, bound_static, "--check", "open"},
               "open", "EPERM", {M});
  r4.fix = make_run(Mode::rootful,
                    base() + Args{"--device-filter", "required", "--gpu"} +
                        Args{p.rootfs, injected_static, "--check", "open"},
                    passed, "", {M}, "--gpu");
  rows.push_back(r4);

  RowSpec r5;
  r5.id = 5;
  r5.configuration = "FAKEGPU_VISIBLE_DEVICES=0, both nodes injected, direct open of fakegpu1";
  r5.breaks =
      "libfakegpu hides fakegpu1, yet the process opens /dev/fakegpu1 itself: visibility, "
      "not security";
  r5.fixes = "inject only the GPUs it may use (--gpu 0): the device filter refuses the others";
  r5.run = make_run(Mode::rootful,
                    base() + Args{"--gpu", "-e", "FAKEGPU_VISIBLE_DEVICES=0", p.rootfs,
                                  injected_static, "--device", "/dev/fakegpu1", "--check", "open"},
                    passed, "", {M, Need::two_devices});
  r5.fix = make_run(
      Mode::rootful,
      base() + Args{"--gpu", "0", "--device-filter", "required", "-v",
                    "/dev/fakegpu1:/dev/fakegpu1", "-e", "FAKEGPU_VISIBLE_DEVICES=0", p.rootfs,
                    injected_static, "--device", "/dev/fakegpu1", "--check", "open"},
      "open", "EPERM", {M, Need::two_devices}, "--gpu 0 with the filter");
  rows.push_back(r5);

  // Rootless: the kernel's behaviour alone, so no device filter and no helper unless the
  // row is about them.
  const Args off = {"--device-filter", "off"};
  const std::vector<Need> grouped = {M, Need::group_fakegpu, Need::user_in_group};

  RowSpec r6;
  r6.id = 6;
  r6.configuration = "mknod of the node in the container, with CAP_MKNOD";
  r6.breaks = "mknod: EPERM; CAP_MKNOD only counts in the initial user namespace";
  r6.fixes = "bind-mount the host node (what --gpu and --device do rootless)";
  r6.nodes = NodeSetup::group_0660;
  r6.run = make_run(Mode::rootless,
                    base() + off +
                        Args{"--cap-add", "MKNOD", p.rootfs, "/bin/sh", "-c",
                             "mknod /dev/fakegpu0 c " + std::to_string(p.major) + " 0"},
                    "mknod", "EPERM", {M, Need::group_fakegpu});
  r6.fix = make_run(
      Mode::rootless,
      base() + off + Args{"--gpu", "--keep-groups", p.rootfs, injected_static, "--check", "open"},
      passed, "", grouped, "--gpu --keep-groups");
  rows.push_back(r6);

  RowSpec r7;
  r7.id = 7;
  r7.configuration = "node shipped in the image (mknod'ed into a copy, mode 0666)";
  r7.breaks = "open: EACCES; the overlay mounted in the user namespace is nodev (SB_I_NODEV)";
  r7.fixes = "bind the node from the host's devtmpfs: --device /dev/fakegpu0";
  r7.nodes = NodeSetup::group_0660;
  r7.run = make_run(
      Mode::rootless,
      base() + off + client_static +
          Args{p.image_rootfs, bound_static, "--device", "/gpu/fakegpu0", "--check", "open"},
      "open", "EACCES", {M, Need::group_fakegpu});
  r7.fix = make_run(
      Mode::rootless,
      base() + off + Args{"--device", "/dev/fakegpu0", "--keep-groups"} + client_static +
          Args{p.image_rootfs, bound_static, "--device", "/dev/fakegpu0", "--check", "open"},
      passed, "", grouped, "--device /dev/fakegpu0 --keep-groups");
  rows.push_back(r7);

  RowSpec r8;
  r8.id = 8;
  r8.configuration = "root:fakegpu 0660 node bound in, supplementary groups dropped";
  r8.breaks = "open: EACCES; the node shows as nobody:nogroup and setgroups dropped group fakegpu";
  r8.fixes = "--keep-groups (no setgroups: the caller's groups stay)";
  r8.nodes = NodeSetup::group_0660;
  r8.run = make_run(Mode::rootless,
                    base() + off + Args{"--gpu", p.rootfs, injected_static, "--check", "open"},
                    "open", "EACCES", grouped);
  r8.fix = make_run(
      Mode::rootless,
      base() + off + Args{"--gpu", "--keep-groups", p.rootfs, injected_static, "--check", "open"},
      passed, "", grouped, "--keep-groups");
  rows.push_back(r8);

  RowSpec r9;
  r9.id = 9;
  r9.configuration = "root:root 0600 node bound in";
  r9.breaks =
      "open: EACCES even as container root; CAP_DAC_OVERRIDE does not reach unmapped inodes";
  r9.fixes = "mrun-gpu-helper (setuid, policy) makes the node usable";
  r9.nodes = NodeSetup::root_0600;
  r9.run = make_run(
      Mode::rootless,
      base() + off + Args{"--gpu", "--keep-groups", p.rootfs, injected_static, "--check", "open"},
      "open", "EACCES", {M});
  r9.fix = make_run(
      Mode::rootless,
      base() + Args{"--gpu", "--keep-groups", p.rootfs, injected_static, "--check", "open"}, passed,
      "", {M, Need::helper}, "with mrun-gpu-helper");
  r9.fix->use_helper = true;
  rows.push_back(r9);

  RowSpec r10;
  r10.id = 10;
  r10.configuration = "attaching the device filter";
  r10.breaks =
      "BPF_PROG_LOAD: EPERM (unprivileged BPF is off), so without the helper any node "
      "bound in can be opened";
  r10.fixes = "mrun-gpu-helper attaches the filter to the delegated cgroup; it is enforced";
  r10.nodes = NodeSetup::group_0660;
  r10.run = make_run(Mode::rootless,
                     base() + Args{"--device-filter", "required", "--gpu", "--keep-groups",
                                   p.rootfs, injected_static, "--check", "open"},
                     "BPF_PROG_LOAD", "EPERM", {M, Need::group_fakegpu});
  r10.fix = make_run(Mode::rootless,
                     base() + Args{"--device-filter", "required", "--gpu", "0", "--keep-groups",
                                   "-v", "/dev/fakegpu1:/dev/fakegpu1", p.rootfs, injected_static,
                                   "--device", "/dev/fakegpu1", "--check", "open"},
                     "open", "EPERM",
                     {M, Need::two_devices, Need::group_fakegpu, Need::user_in_group, Need::helper,
                      Need::delegated_cgroup},
                     "with mrun-gpu-helper: fakegpu1 bound in but not allowed");
  r10.fix->use_helper = true;
  rows.push_back(r10);

  RowSpec r11;
  r11.id = 11;
  r11.configuration = "the driver's privileged ioctl (RESET), --cap-add SYS_ADMIN";
  r11.breaks =
      "reset: EPERM even as container root; the driver checks CAP_SYS_ADMIN in the initial "
      "user namespace";
  r11.fixes = "do privileged work on the host (rootful it works)";
  r11.nodes = NodeSetup::group_0660;
  r11.run = make_run(Mode::rootless,
                     base() + off +
                         Args{"--gpu", "--keep-groups", "--cap-add", "SYS_ADMIN", p.rootfs,
                              injected_static, "--check", "reset"},
                     "reset", "EPERM", grouped);
  r11.fix = make_run(Mode::rootful,
                     base() + Args{"--gpu", "--cap-add", "SYS_ADMIN", p.rootfs, injected_static,
                                   "--check", "reset"},
                     passed, "", {M}, "rootful");
  rows.push_back(r11);

  RowSpec r12;
  r12.id = 12;
  r12.configuration = "mmap'd buffers, jobs and the submission ring once the node is open";
  r12.breaks = "nothing: the data path is the same rootless and rootful";
  r12.fixes = "-";
  r12.nodes = NodeSetup::group_0660;
  const Args data_checks = {"--check", "info,alloc,map,fill,copy,checksum,wait,ring"};
  r12.run = make_run(
      Mode::rootless,
      base() + off + Args{"--gpu", "--keep-groups", p.rootfs, injected_static} + data_checks,
      passed, "", grouped);
  r12.fix = make_run(Mode::rootful, base() + Args{"--gpu", p.rootfs, injected_static} + data_checks,
                     passed, "", {M}, "rootful");
  rows.push_back(r12);

  // Version skew (fakegpu(4), VERSIONS): the image's own copy of the library, found
  // first on its LD_LIBRARY_PATH, was built for a newer driver than the host runs.
  RowSpec r13;
  r13.id = 13;
  r13.configuration = "the image brings its own libfakegpu, built for a newer driver (1.2.0)";
  r13.breaks =
      "the image's library is loaded, not the host's, and refuses the older driver: \"driver "
      "version is insufficient for library version\" (requirement 2: the host's user-space "
      "driver)";
  r13.fixes =
      "--gpu puts the host's libfakegpu first on LD_LIBRARY_PATH; a library serves "
      "drivers of its release and newer";
  const Args image_lib = {"-e", "LD_LIBRARY_PATH=/image/lib", "-v",
                          p.skew_library + ":/image/lib/libfakegpu.so.1:ro"};
  const std::vector<Need> skew = {M, Need::skew_library};
  r13.run = make_run(Mode::rootful,
                     base() +
                         Args{"--device", "/dev/fakegpu0", "--device", "/dev/fakegpuctl", "-v",
                              p.client_dynamic + ":/fakegpu-client:ro"} +
                         image_lib + host_libc() + Args{p.rootfs, "/fakegpu-client"},
                     "open", "EPROTO", skew);
  r13.fix =
      make_run(Mode::rootful,
               base() + Args{"--gpu"} + image_lib + host_libc() + Args{p.rootfs, "fakegpu-client"},
               passed, "", skew, "--gpu");
  rows.push_back(r13);
  return rows;
}

std::optional<std::string> missing_precondition(const std::vector<Need>& needs,
                                                const HostFacts& f) {
  for (auto need : needs) {
    switch (need) {
      case Need::module:
        if (!f.module)
          return "fakegpu.ko is not loaded (/dev/fakegpu0, /dev/fakegpuctl missing): "
                 "insmod kmod/fakegpu.ko ndev=2 (kmod/build.sh builds it)";
        break;
      case Need::two_devices:
        if (!f.two_devices)
          return "no /dev/fakegpu1: reload the module with two devices (insmod fakegpu.ko "
                 "ndev=2)";
        break;
      case Need::group_fakegpu:
        if (!f.group_fakegpu)
          return "no group fakegpu: groupadd --system fakegpu (helpers/70-fakegpu.rules gives "
                 "it the nodes)";
        break;
      case Need::user_in_group:
        if (!f.user_in_group)
          return f.user + " is not in group fakegpu: usermod -aG fakegpu " + f.user;
        break;
      case Need::helper:
        if (!f.helper) return f.helper_problem;
        break;
      case Need::skew_library:
        if (!f.skew_library)
          return "no fakegpu-skew/libfakegpu.so.1 next to libfakegpu (meson compile builds it "
                 "in src/gpu/fakegpu-skew)";
        break;
      case Need::delegated_cgroup:
        if (!f.delegated_cgroup)
          return "mrun gpu matrix does not run in a cgroup delegated to " + f.user +
                 " (the helper attaches the filter to the container's leaf there): run it "
                 "from the user's delegated subtree (systemd Delegate=yes)";
        break;
    }
  }
  return std::nullopt;
}

std::string display_command(const std::vector<std::string>& argv, const std::string& work) {
  std::string line;
  for (const auto& word : argv) {
    std::string w = word;
    if (!work.empty()) {
      for (auto pos = w.find(work); pos != std::string::npos; pos = w.find(work, pos + 5))
        w.replace(pos, work.size(), "$WORK");
    }
    bool plain = !w.empty() && w.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR"
                                   "STUVWXYZ0123456789-_=./:,+@$") == std::string::npos;
    if (!line.empty()) line += ' ';
    if (plain) {
      line += w;
    } else {
      std::string quoted = "'";
      for (char c : w) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += quoted + "'";
    }
  }
  return line;
}

}  // namespace mrun::gpucheck
