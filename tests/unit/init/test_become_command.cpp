// The container's side before exec (init/): the command's lookup (127, 126), the
// image's passwd, additionalGids and the process limits checked before anything starts.
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "base/error.hpp"
#include "init/become_command.hpp"
#include "init/container_init.hpp"
#include "init/image_user.hpp"
#include "runtime/process_spec.hpp"

using namespace mrun::runtime;

TEST_CASE("command lookup gives 127 for missing and 126 for not executable") {
  REQUIRE(resolve_command("sh", "/nonexistent:/bin") == "/bin/sh");
  try {
    resolve_command("no-such-command-xyz", "/bin:/usr/bin");
    FAIL("expected an error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 127);
    REQUIRE_THAT(e.what(), Catch::Contains("not found in $PATH"));
  }
  char plain[] = "/tmp/mrun-unit-plain-XXXXXX";
  int fd = ::mkstemp(plain);
  REQUIRE(fd >= 0);
  ::close(fd);
  try {
    resolve_command(plain, "/bin");
    FAIL("expected an error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 126);
  }
  ::unlink(plain);
  try {
    resolve_command("/no/such/file", "/bin");
    FAIL("expected an error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 127);
  }
}

TEST_CASE("the image's passwd gives the primary gid and HOME; HOME is only filled in") {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/sh\n"
      "app:x:1000:1001:App:/home/app:/bin/sh\n"
      "nohome:x:1002:1002:::/bin/sh\n";
  REQUIRE(primary_gid_in_passwd(passwd, 1000) == 1001u);
  REQUIRE(home_in_passwd(passwd, 0) == "/root");
  REQUIRE(home_in_passwd(passwd, 1000) == "/home/app");
  REQUIRE_FALSE(home_in_passwd(passwd, 1002));  // listed without one: "/" then
  REQUIRE_FALSE(home_in_passwd(passwd, 4242));
  using Env = std::vector<std::string>;
  REQUIRE(with_home({"PATH=/bin"}, "/root") == Env{"PATH=/bin", "HOME=/root"});
  REQUIRE(with_home({"HOME=", "A=1"}, "/root") == Env{"HOME=/root", "A=1"});  // runc's rule
  REQUIRE(with_home({"HOME=/tmp"}, "/root") == Env{"HOME=/tmp"});
}

TEST_CASE("additionalGids: set, dropped, kept, or a clear error where setgroups is denied") {
  ProcessSpec spec;
  CommandProcess p{spec};
  spec.user.gid = 1000;
  REQUIRE(supplementary_groups(p, 1000) == std::vector<gid_t>{});  // the caller's dropped
  spec.user.additional_gids = {0, 10};
  REQUIRE(supplementary_groups(p, 1000) == std::vector<gid_t>{0, 10});
  spec.keep_groups = true;  // --keep-groups / run.oci.keep_original_groups, as crun
  REQUIRE_FALSE(supplementary_groups(p, 1000));
  spec.keep_groups = false;
  p.may_setgroups = false;  // a single-id rootless map
  try {
    supplementary_groups(p, 1000);
    FAIL("expected an error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 125);
    REQUIRE_THAT(e.what(), Catch::Contains("process.user.additionalGids [0,10]"));
    REQUIRE_THAT(e.what(), Catch::Contains("setgroups is denied"));
  }
  spec.user.additional_gids = {1000};  // the primary gid alone: nothing to do
  REQUIRE_FALSE(supplementary_groups(p, 1000));
  spec.user.additional_gids = {};
  REQUIRE_FALSE(supplementary_groups(p, 1000));
}

TEST_CASE("process.rlimits and oomScoreAdj are checked before anything starts") {
  REQUIRE(rlimit_resource("RLIMIT_NOFILE") == RLIMIT_NOFILE);
  REQUIRE_FALSE(rlimit_resource("NOFILE"));
  ProcessSpec p;
  p.rlimits = {{"RLIMIT_NOFILE", 10, 10}};
  p.oom_score_adj = -1000;
  REQUIRE_NOTHROW(validate_process_limits(p));
  p.rlimits = {{"RLIMIT_STACK", 11, 10}};
  p.oom_score_adj.reset();
  REQUIRE_THROWS_WITH(validate_process_limits(p),
                      Catch::Contains("RLIMIT_STACK: soft limit 11 is above the hard limit 10"));
  p.rlimits.clear();
  p.oom_score_adj = 1001;
  REQUIRE_THROWS_WITH(validate_process_limits(p), Catch::Contains("process.oomScoreAdj"));
}
