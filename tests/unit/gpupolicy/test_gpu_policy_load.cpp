// The helper's policy loader (src/gpupolicy/gpu_policy_load.h), on real files: what
// mrun-gpu-helper(8) refuses, and `mrun gpu doctor` (gpucheck::inspect_helper) refusing
// the same files with the same words. Ownership is the point, so these run as root
// (the unit tests do in CI); as another user they say why they do nothing.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gpucheck/host_facts.hpp"
#include "gpupolicy/gpu_policy.h"
#include "gpupolicy/gpu_policy_load.h"

namespace {

namespace fs = std::filesystem;

// Catch2 2 has no SKIP: say why, and pass.
#define REQUIRE_ROOT_OR_RETURN()                                                               \
  do {                                                                                         \
    if (::geteuid() != 0) {                                                                    \
      WARN("not run: the loader checks that files are root's, so this test must run as root"); \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

// A root-owned directory, mode 0755, holding the policy file `gpu-helper.conf`.
struct PolicyDir {
  std::string dir;
  std::string file;
  PolicyDir() {
    char tmpl[] = "/tmp/mrun-policy-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    file = dir + "/gpu-helper.conf";
  }
  ~PolicyDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  PolicyDir(const PolicyDir&) = delete;
  PolicyDir& operator=(const PolicyDir&) = delete;

  void write(const std::string& text, mode_t mode = 0644) const { write_at(file, text, mode); }
  static void write_at(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::trunc) << text;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
  }
};

struct Loaded {
  int status = -1;
  int err_no = 0;
  std::string err;
  std::unique_ptr<policy> p = std::make_unique<policy>();  // about 280 KiB
};

Loaded load(const std::string& path) {
  Loaded l;
  char err[1024] = "";
  errno = 0;
  l.status = policy_load(path.c_str(), l.p.get(), err, sizeof err);
  l.err_no = errno;
  l.err = err;
  return l;
}

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* const good = "# test\n/dev/fakegpu* user:alice group:fakegpu\n/dev/null0 uid:1001\n";

}  // namespace

TEST_CASE("policy loader: a root-owned policy in a root-owned directory loads") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  d.write(good);
  int fds = open_fds();
  auto l = load(d.file);
  CHECK(l.status == POLICY_LOAD_OK);
  CHECK(l.err.empty());
  CHECK(l.p->count == 2);
  CHECK(l.p->max_filters_per_user == POLICY_DEFAULT_MAX_FILTERS);
  CHECK(open_fds() == fds);
  // Not writable by group or others is all it asks: read-only for root is fine too.
  REQUIRE(::chmod(d.file.c_str(), 0400) == 0);
  CHECK(load(d.file).status == POLICY_LOAD_OK);
  // The directory "/" itself, as for a policy at the top.
  CHECK(load("/nonexistent-mrun-policy.conf").status == POLICY_LOAD_ABSENT);
}

TEST_CASE("policy loader: a file writable by group or others is refused") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  for (mode_t mode : {0664, 0646, 0666}) {
    d.write(good, mode);
    auto l = load(d.file);
    CHECK(l.status == POLICY_LOAD_UNSAFE);
    CHECK(contains(l.err, d.file + ": owner uid 0, mode 0" + std::to_string(mode / 64) +
                              std::to_string(mode / 8 % 8) + std::to_string(mode % 8)));
    CHECK(contains(l.err, "must be a regular file owned by root, not writable by group or others"));
    CHECK(contains(l.err, "chmod go-w " + d.file));
    CHECK(l.err_no == 0);
  }
}

TEST_CASE("policy loader: a file owned by another uid is refused") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  d.write(good);
  REQUIRE(::chown(d.file.c_str(), 65534, 0) == 0);
  auto l = load(d.file);
  CHECK(l.status == POLICY_LOAD_UNSAFE);
  CHECK(contains(l.err, "owner uid 65534"));
  CHECK(contains(l.err, "chown root " + d.file));
}

TEST_CASE("policy loader: a symlink is refused, even to a good policy") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  PolicyDir::write_at(d.dir + "/real.conf", good, 0644);
  REQUIRE(::symlink("real.conf", d.file.c_str()) == 0);
  auto l = load(d.file);
  CHECK(l.status == POLICY_LOAD_UNSAFE);
  CHECK(contains(l.err, d.file + ": a symbolic link"));
  CHECK(load(d.dir + "/real.conf").status == POLICY_LOAD_OK);
}

TEST_CASE("policy loader: a directory others can write, or that is a symlink, is refused") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  d.write(good);
  for (mode_t mode : {0757, 0775, 01777}) {
    REQUIRE(::chmod(d.dir.c_str(), mode) == 0);
    auto l = load(d.file);
    CHECK(l.status == POLICY_LOAD_UNSAFE);
    CHECK(contains(l.err, d.dir + ": owner uid 0"));
    CHECK(contains(
        l.err, "the policy's directory must be owned by root, not writable by group or others"));
    CHECK(contains(l.err, "chmod go-w " + d.dir));
  }
  REQUIRE(::chmod(d.dir.c_str(), 0755) == 0);
  REQUIRE(::chown(d.dir.c_str(), 65534, 0) == 0);
  CHECK(contains(load(d.file).err, d.dir + ": owner uid 65534"));
  REQUIRE(::chown(d.dir.c_str(), 0, 0) == 0);

  const std::string link = d.dir + "/link";
  REQUIRE(::symlink(d.dir.c_str(), link.c_str()) == 0);
  auto l = load(link + "/gpu-helper.conf");
  CHECK(l.status == POLICY_LOAD_UNSAFE);
  CHECK(contains(l.err, link + ": not a directory"));
}

TEST_CASE("policy loader: more than 64 KiB is refused, 64 KiB is not") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  std::string text = good;
  text += std::string(POLICY_MAX_BYTES - text.size() - 1, '#') + "\n";
  REQUIRE(text.size() == POLICY_MAX_BYTES);
  d.write(text);
  CHECK(load(d.file).status == POLICY_LOAD_OK);
  d.write(text + "#");
  auto l = load(d.file);
  CHECK(l.status == POLICY_LOAD_MALFORMED);
  CHECK(contains(l.err, d.file + ": 65537 bytes, larger than 64 KiB"));
}

TEST_CASE("policy loader: a FIFO is refused without waiting for a writer") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  REQUIRE(::mkfifo(d.file.c_str(), 0644) == 0);
  // In a child with an alarm: a loader that opened the FIFO for reading would wait for a
  // writer forever, and the alarm turns that into a failure instead of a hung test.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(5);
    _exit(load(d.file).status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("the loader was killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                          << " (SIGALRM: it blocked opening the FIFO)");
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == POLICY_LOAD_UNSAFE);
  CHECK(contains(load(d.file).err, d.file + ": not a regular file"));
}

TEST_CASE("policy loader: missing, malformed, not absolute") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  auto l = load(d.file);
  CHECK(l.status == POLICY_LOAD_ABSENT);
  CHECK(l.err_no == ENOENT);
  CHECK(contains(l.err, "no policy: nothing is allowed"));
  l = load(d.dir + "/missing-dir/gpu-helper.conf");
  CHECK(l.status == POLICY_LOAD_ABSENT);
  CHECK(contains(l.err, d.dir + "/missing-dir: "));

  d.write("/dev/fakegpu0 user:alice\n/dev/fakegpu1 person:bob\n");
  l = load(d.file);
  CHECK(l.status == POLICY_LOAD_MALFORMED);
  CHECK(contains(l.err, d.file + ":2: expected user:NAME"));

  CHECK(load("gpu-helper.conf").status == POLICY_LOAD_UNSAFE);
  CHECK(load(d.dir + "/").status == POLICY_LOAD_UNSAFE);
}

TEST_CASE("policy loader: no descriptor is left open on any path") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  int fds = open_fds();
  load(d.file);  // absent
  d.write(good, 0666);
  load(d.file);  // refused after fstatat
  d.write("bad line\n");
  load(d.file);  // malformed after reading
  REQUIRE(::chmod(d.dir.c_str(), 0777) == 0);
  load(d.file);  // directory refused
  CHECK(open_fds() == fds);
}

// `mrun gpu doctor` judged the policy by stat(2) of the file alone: it passed policies
// the helper refuses (a directory others can write, a symlink, more than 64 KiB) and
// hung on a FIFO. It now loads it with the helper's loader and reports its words.
TEST_CASE("doctor: refuses every policy the helper refuses, in the helper's words") {
  REQUIRE_ROOT_OR_RETURN();
  PolicyDir d;
  d.write(good);
  mrun::gpucheck::UserInfo alice;
  alice.name = "alice";
  alice.uid = 1000;
  alice.gid = 1000;
  const std::vector<std::string> nodes{"/dev/fakegpu0", "/dev/fakegpuctl"};

  auto h = mrun::gpucheck::inspect_helper("", alice, nodes, d.file);
  CHECK(h.policy_present);
  CHECK(h.policy_error.empty());
  CHECK(h.policy_allows);
  CHECK(h.policy_path == d.file);

  auto refused_alike = [&](const std::string& what) {
    INFO(what);
    auto l = load(d.file);
    REQUIRE(l.status != POLICY_LOAD_OK);
    auto fact = mrun::gpucheck::inspect_helper("", alice, nodes, d.file);
    CHECK(fact.policy_present);
    CHECK(fact.policy_error == l.err);
    CHECK_FALSE(fact.policy_allows);
  };
  REQUIRE(::chmod(d.dir.c_str(), 0777) == 0);
  refused_alike("a directory others can write");
  REQUIRE(::chmod(d.dir.c_str(), 0755) == 0);
  d.write(good + std::string(POLICY_MAX_BYTES, '#'));
  refused_alike("more than 64 KiB");
  REQUIRE(::unlink(d.file.c_str()) == 0);
  PolicyDir::write_at(d.dir + "/real.conf", good, 0644);
  REQUIRE(::symlink("real.conf", d.file.c_str()) == 0);
  refused_alike("a symlink");
  REQUIRE(::unlink(d.file.c_str()) == 0);
  REQUIRE(::mkfifo(d.file.c_str(), 0644) == 0);
  refused_alike("a FIFO");
  REQUIRE(::unlink(d.file.c_str()) == 0);
  d.write(good, 0664);
  refused_alike("a file the group can write");

  REQUIRE(::unlink(d.file.c_str()) == 0);
  h = mrun::gpucheck::inspect_helper("", alice, nodes, d.file);
  CHECK_FALSE(h.policy_present);
}
