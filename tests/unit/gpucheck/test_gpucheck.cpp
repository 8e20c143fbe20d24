// mrun gpu matrix and doctor: the pure parts (outcome parsing, rows, rendering, ladder).
#include <algorithm>
#include <catch2/catch.hpp>

#include "gpu/version.hpp"
#include "gpucheck/ladder.hpp"
#include "gpucheck/matrix_report.hpp"
#include "gpucheck/matrix_rows.hpp"
#include "gpucheck/outcome.hpp"

using namespace mrun::gpucheck;

TEST_CASE("outcome: fakegpu-client's FAIL line gives the check and the errno") {
  auto o = parse_outcome(
      "ok open: /dev/fakegpu0\nFAIL open: open /dev/fakegpu0: EACCES (Permission denied)\n", 10);
  CHECK(o.step == "open");
  CHECK(o.errno_name == "EACCES");
  CHECK(o.exit_status == 10);
  CHECK(o.line == "FAIL open: open /dev/fakegpu0: EACCES (Permission denied)");

  o = parse_outcome(
      "ok open: x\nFAIL reset: reset /dev/fakegpu0: EPERM (Operation not permitted)\n", 22);
  CHECK(o.step == "reset");
  CHECK(o.errno_name == "EPERM");
}

TEST_CASE("outcome: a failure without errno, and all checks passed") {
  auto o = parse_outcome("FAIL checksum: crc32 0x1 != 0x2\n", 16);
  CHECK(o.step == "checksum");
  CHECK(o.errno_name.empty());
  o = parse_outcome("FAIL open: no visible device (FAKEGPU_VISIBLE_DEVICES='')\n", 3);
  CHECK(o.step == "open");
  CHECK(o.errno_name.empty());
  o = parse_outcome("ok open: /dev/fakegpu0\nok info: abi 1\nALL CHECKS PASSED\n", 0);
  CHECK(o.step == step_passed);
  CHECK(o.errno_name.empty());
}

TEST_CASE("outcome: the dynamic loader's error is a failure to start") {
  auto o = parse_outcome(
      "/fakegpu-client: error while loading shared libraries: libfakegpu.so.1: cannot open "
      "shared object file: No such file or directory\n",
      127);
  CHECK(o.step == "load libraries");
  CHECK(o.errno_name == "ENOENT");
}

TEST_CASE("outcome: mrun's own error, BPF named") {
  auto o = parse_outcome(
      "mrun: warning: something\nmrun: device filter: BPF_PROG_LOAD: EPERM (unprivileged BPF "
      "is off) (install mrun-gpu-helper)\n",
      125);
  CHECK(o.step == "BPF_PROG_LOAD");
  CHECK(o.errno_name == "EPERM");
  o = parse_outcome("mrun: attach: BPF_PROG_ATTACH: Operation not permitted\n", 125);
  CHECK(o.step == "BPF_PROG_ATTACH");
  CHECK(o.errno_name == "EPERM");
  o = parse_outcome("mrun: --gpu: /dev/fakegpu1 does not exist: No such device\n", 125);
  CHECK(o.step == "mrun");
  CHECK(o.errno_name == "ENODEV");
  // The longest message wins: "No such device or address" is ENXIO, not ENODEV.
  CHECK(errno_in("open: No such device or address") == "ENXIO");
  // A word that only looks like an errno does not count.
  CHECK(errno_in("EXAMPLE of ENOTAREALERRNO") == "");
}

TEST_CASE("outcome: a busybox applet's error, and an unknown failure") {
  auto o = parse_outcome("mknod: /dev/fakegpu0: Operation not permitted\n", 1);
  CHECK(o.step == "mknod");
  CHECK(o.errno_name == "EPERM");
  o = parse_outcome("something odd\n", 3);
  CHECK(o.step == "exit 3");
  CHECK(o.errno_name.empty());
}

namespace {
MatrixPaths paths() {
  MatrixPaths p;
  p.rootfs = "/w/rootfs";
  p.image_rootfs = "/w/image";
  p.client_static = "/w/gpu/fakegpu-client-static";
  p.client_dynamic = "/w/dyn/fakegpu-client";
  p.major = 240;
  return p;
}
bool has(const std::vector<std::string>& args, const std::string& word) {
  return std::find(args.begin(), args.end(), word) != args.end();
}
}  // namespace

TEST_CASE("matrix rows: the issue's twelve and version skew, each a run of mrun run") {
  auto rows = matrix_rows(paths());
  REQUIRE(rows.size() == 13);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    CHECK(rows[i].id == static_cast<int>(i) + 1);
    CHECK(rows[i].run.args.at(0) == "run");
    CHECK(has(rows[i].run.args, "--rm"));
    CHECK(!rows[i].configuration.empty());
    CHECK(!rows[i].breaks.empty());
    CHECK(!rows[i].run.expect_step.empty());
  }
  for (int i : {0, 1, 2, 3, 4}) CHECK(rows[i].run.mode == Mode::rootful);
  for (int i : {5, 6, 7, 8, 9, 10, 11}) CHECK(rows[i].run.mode == Mode::rootless);
  CHECK(rows[0].run.expect_errno == "ENOENT");
  CHECK(rows[1].run.expect_step == "load libraries");
  CHECK(rows[2].run.expect_step == step_passed);
  CHECK(rows[3].run.expect_errno == "EPERM");
  CHECK(rows[5].run.expect_step == "mknod");
  CHECK(has(rows[5].run.args, "mknod /dev/fakegpu0 c 240 0"));
  CHECK(
      rows[6].run.args.at(std::find(rows[6].run.args.begin(), rows[6].run.args.end(), "/w/image") -
                          rows[6].run.args.begin()) == "/w/image");
  CHECK(rows[6].run.expect_errno == "EACCES");
  CHECK(rows[7].nodes == NodeSetup::group_0660);
  CHECK(!has(rows[7].run.args, "--keep-groups"));
  CHECK(has(rows[7].fix->args, "--keep-groups"));
  CHECK(rows[8].nodes == NodeSetup::root_0600);
  CHECK(rows[8].fix->use_helper);
  CHECK(rows[9].run.expect_step == "BPF_PROG_LOAD");
  CHECK(!rows[9].run.use_helper);
  CHECK(rows[10].run.expect_step == "reset");
  CHECK(rows[10].fix->mode == Mode::rootful);
  CHECK(rows[11].run.expect_step == step_passed);
  CHECK(rows[11].fix->mode == Mode::rootful);
}

TEST_CASE("matrix: a missing precondition says why and the fix") {
  HostFacts facts;
  facts.user = "alice";
  auto why = missing_precondition({Need::module}, facts);
  REQUIRE(why);
  CHECK(why->find("insmod") != std::string::npos);
  facts.module = true;
  facts.group_fakegpu = true;
  why = missing_precondition({Need::module, Need::user_in_group}, facts);
  REQUIRE(why);
  CHECK(why->find("usermod -aG fakegpu alice") != std::string::npos);
  facts.helper_problem = "helper missing: install it";
  why = missing_precondition({Need::helper}, facts);
  REQUIRE(why);
  CHECK(*why == "helper missing: install it");
  facts.user_in_group = true;
  CHECK(!missing_precondition({Need::module, Need::user_in_group}, facts));
}

TEST_CASE("matrix: command lines are shell-quoted, the work dir shown as $WORK") {
  CHECK(display_command({"mrun", "run", "/tmp/m.x/rootfs", "/bin/sh", "-c", "mknod a c 1 2"},
                        "/tmp/m.x") == "mrun run $WORK/rootfs /bin/sh -c 'mknod a c 1 2'");
  CHECK(display_command({"echo", "it's"}, "") == "echo 'it'\\''s'");
}

namespace {
MatrixReport sample_report() {
  MatrixReport report;
  report.kernel = "6.1.0-57-amd64 #1 SMP";
  report.rootless_user = "alice";
  auto rows = matrix_rows(paths());
  RowResult a;
  a.spec = rows[7];
  a.run.mode = Mode::rootless;
  a.run.command = "mrun run --gpu $WORK/rootfs x";
  a.run.expect_step = "open";
  a.run.expect_errno = "EACCES";
  a.run.outcome = {"open", "EACCES", 10, "FAIL open: ..."};
  RunResult fix;
  fix.mode = Mode::rootless;
  fix.label = "--keep-groups";
  fix.expect_step = step_passed;
  fix.skipped = "alice is not in group fakegpu: usermod -aG fakegpu alice";
  a.fix = fix;
  report.rows.push_back(a);
  RowResult b;
  b.spec = rows[10];
  b.run.mode = Mode::rootless;
  b.run.expect_step = "reset";
  b.run.expect_errno = "EPERM";
  b.run.outcome = {step_passed, "", 0, "ALL CHECKS PASSED"};
  report.rows.push_back(b);
  return report;
}
}  // namespace

TEST_CASE("matrix report: verdicts, Markdown and JSON") {
  auto report = sample_report();
  CHECK(verdict(report.rows[0].run) == "as expected");
  CHECK(verdict(*report.rows[0].fix) == "skipped");
  CHECK(verdict(report.rows[1].run) == "differs");
  CHECK(!all_as_expected(report));

  auto md = render_markdown(report);
  CHECK(md.find("6.1.0-57-amd64 #1 SMP") != std::string::npos);
  CHECK(md.find("| 8 | rootless |") != std::string::npos);
  CHECK(md.find("open EACCES (exit 10)") != std::string::npos);
  CHECK(md.find("skipped: alice is not in group fakegpu") != std::string::npos);
  CHECK(md.find("**differs: expected reset EPERM**") != std::string::npos);
  CHECK(md.find("`mrun run --gpu $WORK/rootfs x`") != std::string::npos);

  auto j = to_json(report);
  CHECK(j["kernel"] == "6.1.0-57-amd64 #1 SMP");
  CHECK(j["all_as_expected"] == false);
  REQUIRE(j["rows"].size() == 2);
  auto r = j["rows"][0];
  CHECK(r["id"] == 8);
  CHECK(r["mode"] == "rootless");
  CHECK(r["step"] == "open");
  CHECK(r["errno"] == "EACCES");
  CHECK(r["exit_status"] == 10);
  CHECK(r["expected"]["step"] == "open");
  CHECK(r["result"] == "as expected");
  CHECK(r["command"] == "mrun run --gpu $WORK/rootfs x");
  CHECK(!r["breaks"].get<std::string>().empty());
  CHECK(!r["fixes"].get<std::string>().empty());
  CHECK(r["fix"]["result"] == "skipped");
  CHECK(r["fix"]["step"].is_null());
}

namespace {
DoctorFacts healthy_user() {
  DoctorFacts f;
  f.user = "alice";
  f.uid = 1000;
  f.module_loaded = true;
  f.major = 240;
  for (auto [name, minor] : {std::pair{"/dev/fakegpu0", 0u}, std::pair{"/dev/fakegpuctl", 255u}}) {
    NodeFact n;
    n.path = name;
    n.exists = n.is_char = true;
    n.major = 240;
    n.minor = minor;
    n.sysfs_dev = std::pair{240u, minor};
    n.owner = "root";
    n.group = "fakegpu";
    n.mode = 0660;
    n.caller_can_open = true;
    f.nodes.push_back(n);
  }
  f.helper.path = "/usr/libexec/mrun/mrun-gpu-helper";
  f.helper.setuid_root = f.helper.policy_present = f.helper.policy_allows = true;
  f.subuid = f.subgid = f.newuidmap = true;
  return f;
}
int failing(const DoctorFacts& f) {
  return doctor_status(climb(f));
}
std::string fix_of(const DoctorFacts& f) {
  auto rungs = climb(f);
  return rungs.back().ok ? "" : rungs.back().detail;
}
}  // namespace

TEST_CASE("doctor: a healthy host passes every rung") {
  auto rungs = climb(healthy_user());
  CHECK(rungs.size() == 6);
  CHECK(doctor_status(rungs) == 0);
  CHECK(render_rungs(rungs).find("ok   fakegpu module loaded: character major 240") !=
        std::string::npos);
}

TEST_CASE("doctor: each host rung stops the ladder with its fix") {
  auto f = healthy_user();
  f.module_loaded = false;
  f.major.reset();
  CHECK(failing(f) == doctor_exit::module);
  CHECK(fix_of(f).find("modprobe fakegpu") != std::string::npos);
  CHECK(climb(f).size() == 1);

  f = healthy_user();
  f.nodes.pop_back();
  CHECK(failing(f) == doctor_exit::nodes);
  CHECK(fix_of(f).find("/dev/fakegpuctl is missing") != std::string::npos);

  f = healthy_user();
  f.nodes[0].major = 1;
  CHECK(failing(f) == doctor_exit::nodes);
  CHECK(fix_of(f).find("is c 1:0, the driver's is c 240:0") != std::string::npos);

  f = healthy_user();
  f.nodes[0].caller_can_open = false;
  f.nodes[0].group = "root";
  f.nodes[0].mode = 0600;
  f.helper.policy_allows = false;
  CHECK(failing(f) == doctor_exit::access);
  CHECK(fix_of(f).find("chmod 0660") != std::string::npos);

  f = healthy_user();
  f.nodes[0].caller_can_open = false;
  CHECK(failing(f) == 0);  // the helper grants it
  f.helper.policy_allows = false;
  f.in_group_db = true;
  CHECK(failing(f) == doctor_exit::access);
  CHECK(fix_of(f).find("log in again") != std::string::npos);

  f = healthy_user();
  f.helper.policy_allows = false;
  f.helper.not_allowed = "/dev/fakegpu0";
  CHECK(failing(f) == doctor_exit::helper);
  CHECK(fix_of(f).find("does not allow alice /dev/fakegpu0") != std::string::npos);
  f.helper.setuid_root = false;
  CHECK(fix_of(f).find("chmod 4755") != std::string::npos);
  f.helper.path.clear();
  CHECK(fix_of(f).find("not installed") != std::string::npos);

  f = healthy_user();
  f.subgid = false;
  f.add_subids_command = "usermod --add-subuids 231072-296607 --add-subgids 231072-296607 alice";
  CHECK(failing(f) == doctor_exit::subids);
  CHECK(fix_of(f).find("--add-subgids 231072-296607") != std::string::npos);

  f = healthy_user();
  f.uid = 0;
  f.user = "root";
  f.helper = {};
  f.subuid = false;
  CHECK(failing(f) == 0);
}

TEST_CASE("doctor: the rungs inside a container") {
  auto f = healthy_user();
  ContainerFact c;
  c.name = "gpu";
  c.running = true;
  c.pid = 42;
  c.uid = 1000;
  c.nodes_visible = {"/dev/fakegpu0", "/dev/fakegpuctl"};
  c.groups = {1000, 990};
  c.node_gid = 990;
  c.node_mode = 0660;
  c.device_filter = "helper";
  c.libs_injected = true;
  c.library = "/opt/fakegpu/lib/libfakegpu.so.1";
  c.library_version = 0x010100;
  f.driver_version = 0x010100;
  f.container = c;
  CHECK(failing(f) == 0);
  CHECK(climb(f).size() == 12);

  auto g = f;
  g.container->running = false;
  CHECK(failing(g) == doctor_exit::container_running);
  g = f;
  g.container->nodes_visible.clear();
  CHECK(failing(g) == doctor_exit::node_visible);
  CHECK(fix_of(g).find("--gpu") != std::string::npos);
  g.container->nodes_visible = {"/dev/fakegpuctl"};
  CHECK(fix_of(g).find("no /dev/fakegpuN") != std::string::npos);
  g.container->nodes_visible = {"/dev/fakegpu1", "/dev/fakegpuctl"};
  g.container->nodes_missing = {"/dev/fakegpu0"};
  CHECK(failing(g) == 0);  // --gpu 1: one GPU is enough
  g = f;
  g.container->groups = {1000};
  CHECK(failing(g) == doctor_exit::groups_kept);
  CHECK(fix_of(g).find("--keep-groups") != std::string::npos);
  g.container->rootless = false;
  g.container->uid = 0;
  CHECK(failing(g) == 0);
  g = f;
  g.container->device_filter = "none: unprivileged BPF is off";
  CHECK(failing(g) == doctor_exit::device_filter);
  CHECK(fix_of(g).find("none: unprivileged BPF is off: install mrun-gpu-helper") !=
        std::string::npos);
  g.container->device_filter = "none: --device-filter=off";
  CHECK(fix_of(g).find("restart it without --device-filter=off") != std::string::npos);
  g = f;
  g.container->libs_injected = false;
  g.container->library.clear();
  CHECK(failing(g) == doctor_exit::libs);
  CHECK(fix_of(g).find("run it with --gpu") != std::string::npos);
}

TEST_CASE("doctor: the library the container loads must serve the host's driver") {
  auto f = healthy_user();
  ContainerFact c;
  c.name = "skew";
  c.running = true;
  c.rootless = false;
  c.nodes_visible = {"/dev/fakegpu0", "/dev/fakegpuctl"};
  c.device_filter = "bpf";
  c.library = "/image/lib/libfakegpu.so.1";  // the image's own, first on LD_LIBRARY_PATH
  c.library_version = 0x010200;
  f.driver_version = 0x010100;
  f.container = c;
  CHECK(failing(f) == doctor_exit::library_version);
  CHECK(fix_of(f).find("driver version is insufficient for library version: libfakegpu 1.2.0 "
                       "(/image/lib/libfakegpu.so.1), driver 1.1.0") != std::string::npos);
  CHECK(fix_of(f).find("--gpu") != std::string::npos);
  f.container->library_version = 0x010000;  // older: a newer driver serves it
  CHECK(failing(f) == 0);
  f.container->library_version.reset();  // no marker: a 1.0 library
  CHECK(failing(f) == 0);
  f.driver_version.reset();  // a 1.0 driver: same release
  CHECK(failing(f) == 0);
  f.container->library_version = 0x010100;
  CHECK(failing(f) == doctor_exit::library_version);
}

TEST_CASE("doctor: recent Xid events are named with their meaning and fix") {
  auto f = healthy_user();
  f.xids = parse_xid_events(
      "fakegpu: 2 devices, major 240, abi 1, driver 1.1.0\n"
      "fakegpu: Xid 79, pid 9 (old), ctx 0: fakegpu0: before the reload\n"
      "fakegpu: 2 devices, major 240, abi 1, driver 1.1.0\n"
      "other: noise\n"
      "fakegpu: Xid 31, pid 148 (train), ctx 16: fakegpu0: MMU fault: the job at fence 1\n"
      "fakegpu: Xid 79, pid 149 (sh), ctx 0: fakegpu1: GPU has fallen off the bus\n");
  REQUIRE(f.xids.size() == 2);
  CHECK(f.xids[0].xid == 31);
  CHECK(f.xids[0].pid == 148);
  CHECK(f.xids[0].comm == "train");
  CHECK(f.xids[0].ctx == 16);
  CHECK(f.xids[0].text == "fakegpu0: MMU fault: the job at fence 1");
  CHECK(failing(f) == doctor_exit::xid);
  const auto fix = fix_of(f);
  CHECK(fix.find("Xid 31 (MMU fault), pid 148 (train), ctx 16") != std::string::npos);
  CHECK(fix.find("use after free") != std::string::npos);
  CHECK(fix.find("Xid 79 (GPU has fallen off the bus)") != std::string::npos);
  CHECK(fix.find("reset the device as root") != std::string::npos);
  f.kernel_log_readable = false;
  f.xids.clear();
  CHECK(failing(f) == 0);
  CHECK(climb(f).back().detail.find("dmesg_restrict") != std::string::npos);
}

TEST_CASE("the version marker of a library file is found among other strings") {
  std::string file = std::string("junk FAKEGPU_LIBRARY_VERSION=\0more", 34) +
                     "FAKEGPU_LIBRARY_VERSION=1.2.0 ABI=1" + std::string("\0tail", 5);
  CHECK(fakegpu::version_from_marker(file) == 0x010200u);
  CHECK(!fakegpu::version_from_marker("FAKEGPU_LIBRARY_VERSION= nothing").has_value());
  CHECK(fakegpu::version_string(0x010200) == "1.2.0");
  CHECK(fakegpu::version_string(0) == "1.0.0");
  CHECK(!fakegpu::driver_mismatch(1, fakegpu::library_version()).has_value());
  CHECK(fakegpu::driver_mismatch(1, fakegpu::library_version() - 0x100)
            ->find("driver version is insufficient for library version: driver ") == 0);
  CHECK(fakegpu::driver_mismatch(2, 0x010100)->find("driver ABI 2") == 0);
}
