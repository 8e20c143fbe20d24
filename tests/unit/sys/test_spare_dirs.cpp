// The pool of kept directories (sys/spare_dirs.hpp) on a real filesystem: how many it
// keeps, which a taker may take, what tidying does, and that of several processes
// reaching for one directory exactly one gets it; and, through a test's Syscalls, what
// each lost rename leaves.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"
#include "sys/seam.hpp"
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

namespace {

// The kernel, but for the renames it is told to refuse: the Nth rename (from 0) of
// REFUSED answers its errno, as when another mrun moved the directory first (ENOENT)
// or the pool lies on another filesystem (EXDEV). Records what each rename moved.
struct RefusedRenames : sys::Syscalls {
  std::vector<std::pair<std::size_t, int>> refused;
  std::vector<std::string> moved;
  int renameat(int from_dir, const char* from, int to_dir, const char* to) noexcept override {
    const std::size_t nth = moved.size();
    moved.emplace_back(from);
    for (const auto& [index, err] : refused) {
      if (index == nth) return err;
    }
    return Syscalls::renameat(from_dir, from, to_dir, to);
  }
};

}  // namespace

TEST_CASE("a directory the pool cannot take stays where it was, for the caller to remove") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  make_dir_with(t.path + "/d", "m");
  RefusedRenames kernel;
  kernel.refused = {{0, EXDEV}};
  REQUIRE_FALSE(sys::keep_spare_dir(pool, t.path + "/d", 8, "kept-", kernel));
  REQUIRE(kernel.moved == std::vector<std::string>{t.path + "/d"});
  REQUIRE(sys::exists(t.path + "/d/m"));
  REQUIRE(entries(pool).empty());
}

TEST_CASE("a taker that loses a kept directory to another mrun takes the next, or none") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool", target = t.path + "/target";
  make_dir_with(t.path + "/a", "a");
  make_dir_with(t.path + "/b", "b");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/a", 8, "ready-"));
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/b", 8, "ready-"));
  {
    // The first one it reaches is gone by its rename: it goes on to the other.
    RefusedRenames kernel;
    kernel.refused = {{0, ENOENT}};
    REQUIRE(sys::take_spare_dir(pool, target, any, "ready-", kernel));
    REQUIRE(kernel.moved.size() == 2);
    REQUIRE(kernel.moved[0] != kernel.moved[1]);
    REQUIRE(entries(pool).size() == 1);
    REQUIRE(entries(target).size() == 1);
    REQUIRE(sys::remove_tree(target));
  }
  {
    // Every one lost: no directory, nothing at the target, the pool as it was.
    const auto before = entries(pool);
    RefusedRenames kernel;
    kernel.refused = {{0, ENOENT}};
    REQUIRE_FALSE(sys::take_spare_dir(pool, target, any, "ready-", kernel));
    REQUIRE_FALSE(sys::exists(target));
    REQUIRE(entries(pool) == before);
  }
}

TEST_CASE("tidying: one lost to another tidier is skipped; one not put back is removed") {
  TempDir t("spare");
  const std::string pool = t.path + "/pool";
  make_dir_with(t.path + "/a", "a");
  make_dir_with(t.path + "/b", "b");
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/a", 8));
  REQUIRE(sys::keep_spare_dir(pool, t.path + "/b", 8));
  {
    // The first one's move out of takers' reach loses: the tidier goes on to the next.
    RefusedRenames kernel;
    kernel.refused = {{0, ENOENT}};
    REQUIRE(sys::tidy_one_spare_dir(pool, "ready-", any, kernel));
    REQUIRE(kernel.moved.size() == 3);  // lost, out of reach, back as ready
    const auto kept = entries(pool);
    REQUIRE(kept.size() == 2);
    REQUIRE(std::count_if(kept.begin(), kept.end(),
                          [](const std::string& n) { return starts_with(n, "ready-"); }) == 1);
  }
  {
    // Tidied, but its move back into the pool fails: it is removed, never left under
    // a .tidy- name that no taker takes, and the ready one is untouched.
    RefusedRenames kernel;
    kernel.refused = {{1, ENOSPC}};
    REQUIRE(sys::tidy_one_spare_dir(pool, "ready-", any, kernel));
    const auto kept = entries(pool);
    REQUIRE(kept.size() == 1);
    REQUIRE(starts_with(kept[0], "ready-"));
  }
}
