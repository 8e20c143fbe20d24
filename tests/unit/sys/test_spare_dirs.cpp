// The pool of kept directories (sys/spare_dirs.hpp) on a real filesystem: how many it
// keeps, which a taker may take, what tidying does, and that of several processes
// reaching for one directory exactly one gets it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"
#include "sys/spare_dirs.hpp"
#include "temp_dir.hpp"

using namespace mrun;

namespace {

using test::TempDir;

// A directory at PATH holding one file named MARK.
void make_dir_with(const std::string& path, const std::string& mark) {
  REQUIRE(::mkdir(path.c_str(), 0700) == 0);
  UniqueFd file(::open((path + "/" + mark).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  REQUIRE(file);
}

std::vector<std::string> entries(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd);
  auto names = sys::directory_entries(fd.get());
  std::sort(names.begin(), names.end());
  return names;
}

const auto any = [](int) { return true; };

}  // namespace

TEST_CASE("a pool keeps directories up to its maximum, each under its tag") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  for (int i = 0; i < 3; ++i) make_dir_with(t.path + "/d" + std::to_string(i), "m");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/d0", 2, "ready-"));
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/d1", 2, "ready-"));
  REQUIRE_FALSE(sys::keep_spare_dir(pool, t.path + "/d2", 2, "ready-"));  // full
  REQUIRE(sys::is_dir(t.path + "/d2"));  // not kept: still the caller's to remove
  const auto kept = entries(pool);
  REQUIRE(kept.size() == 2);
  for (const auto& name : kept) REQUIRE(starts_with(name, "ready-"));
  struct stat st {};
  REQUIRE(::stat(pool.c_str(), &st) == 0);
  REQUIRE((st.st_mode & 07777) == 0700);
}

TEST_CASE("a taker gets a kept directory of its tag, and none that is unusable") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool", target = t.path + "/target";
  REQUIRE_FALSE(sys::take_spare_dir(pool, target, any));  // no pool at all
  make_dir_with(t.path + "/a", "a");
  make_dir_with(t.path + "/b", "b");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/a", 8, "untidy-"));
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/b", 8, "ready-"));
  REQUIRE(sys::take_spare_dir(pool, target, any, "ready-"));
  REQUIRE(sys::exists(target + "/b"));  // the tagged one, moved whole
  REQUIRE(entries(pool).size() == 1);
  // The one left has the other tag: not for this taker.
  REQUIRE(sys::remove_tree(target));
  REQUIRE_FALSE(sys::take_spare_dir(pool, target, any, "ready-"));
  // One the check refuses is removed, not handed out nor put back.
  REQUIRE_FALSE(sys::take_spare_dir(
      pool, target, [](int) { return false; }, "untidy-"));
  REQUIRE(entries(pool).empty());
  REQUIRE_FALSE(sys::exists(target));
}

TEST_CASE("tidying readies one untagged directory, removes a refused one, skips ready ones") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  make_dir_with(t.path + "/a", "a");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/a", 8));
  // What TIDY is handed is the kept directory itself, by fd.
  auto empty_it = [](int dir_fd) { return ::unlinkat(dir_fd, "a", 0) == 0; };
  REQUIRE(sys::tidy_one_spare_dir(pool, "ready-", empty_it));
  auto kept = entries(pool);
  REQUIRE(kept.size() == 1);
  REQUIRE(starts_with(kept[0], "ready-"));
  REQUIRE(entries(pool + "/" + kept[0]).empty());
  // Only ready ones left: nothing to tidy.
  REQUIRE_FALSE(sys::tidy_one_spare_dir(pool, "ready-", empty_it));
  make_dir_with(t.path + "/b", "b");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/b", 8));
  REQUIRE(sys::tidy_one_spare_dir(pool, "ready-", [](int) { return false; }));
  REQUIRE(entries(pool) == kept);  // the refused one is gone
}

TEST_CASE("a directory left mid-tidy by a dead mrun is tidied; a live one's is left alone") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  REQUIRE(::mkdir(pool.c_str(), 0700) == 0);
  // A pid that is surely gone: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  const std::string live_name = ".tidy-" + std::to_string(::getpid()) + "-999";
  REQUIRE(::mkdir((pool + "/" + live_name).c_str(), 0700) == 0);
  REQUIRE(::mkdir((pool + "/.tidy-" + std::to_string(dead) + "-0").c_str(), 0700) == 0);
  REQUIRE(sys::tidy_one_spare_dir(pool, "ready-", any));
  auto kept = entries(pool);
  REQUIRE(kept.size() == 2);
  REQUIRE(kept[0] == live_name);
  REQUIRE(starts_with(kept[1], "ready-"));
  REQUIRE_FALSE(sys::tidy_one_spare_dir(pool, "ready-", any));
}

TEST_CASE("of several processes taking from a pool of one, exactly one gets it") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  make_dir_with(t.path + "/only", "m");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/only", 8, "ready-"));
  constexpr int kTakers = 8;
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> takers;
  for (int i = 0; i < kTakers; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)::read(go[0], &c, 1);  // all start together, when the pipe closes
      const std::string target = t.path + "/taken-" + std::to_string(i);
      ::_exit(sys::take_spare_dir(pool, target, any, "ready-") ? 0 : 1);
    }
    takers.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  int winners = 0;
  for (pid_t pid : takers) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    winners += WEXITSTATUS(status) == 0 ? 1 : 0;
  }
  REQUIRE(winners == 1);
  REQUIRE(entries(pool).empty());
  int found = 0;
  for (int i = 0; i < kTakers; ++i) {
    found += sys::exists(t.path + "/taken-" + std::to_string(i) + "/m") ? 1 : 0;
  }
  REQUIRE(found == 1);
}
