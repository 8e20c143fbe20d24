#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "base/spares.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"
#include "temp_dir.hpp"

using namespace mrun::runtime;

TEST_CASE("state round-trips through JSON") {
  ContainerState s;
  s.name = "c1";
  s.status = Status::running;
  s.pid = 42;
  s.pid_start = 12345;
  s.command = {"/bin/sh", "-c", "echo hi"};
  s.remove_on_exit = true;
  s.subordinate_ids = true;
  s.reaped_by_caller = true;
  auto back = state_from_json(state_to_json(s));
  REQUIRE(back.name == "c1");
  REQUIRE(back.status == Status::running);
  REQUIRE(back.pid == 42);
  REQUIRE(back.pid_start == 12345);
  REQUIRE(back.command == s.command);
  REQUIRE(back.remove_on_exit);
  REQUIRE(back.subordinate_ids);
  REQUIRE(back.reaped_by_caller);
  REQUIRE(!state_from_json(R"({"name": "old"})").reaped_by_caller);  // records before it
}

TEST_CASE("a running record whose process is gone reads as stopped") {
  ContainerState s;
  s.status = Status::running;
  s.pid = ::getpid();
  s.pid_start = mrun::sys::process_start_time(::getpid());
  REQUIRE(effective_status(s) == Status::running);
  s.pid_start += 1;  // same pid, another process: pid reuse
  REQUIRE(effective_status(s) == Status::stopped);
}

TEST_CASE("the store claims names exclusively and lists what it holds") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  std::string root = std::string(tmpl) + "/state";
  StateStore store(root);
  store.ensure_root();
  ContainerState s;
  s.name = "a";
  s.command = {"/bin/true"};
  REQUIRE(store.claim(s));
  REQUIRE_FALSE(store.claim(s));
  // Claimed means recorded: the directory never exists without its state.
  REQUIRE(store.read("a")->command == s.command);
  store.write(s);
  REQUIRE(store.read("a")->name == "a");
  REQUIRE(store.list().size() == 1);
  store.remove("a");
  REQUIRE_FALSE(store.read("a").has_value());
}

TEST_CASE("a claim publishes its other files with state.json, and a lost one touches none") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  StateStore store(tmpl);
  ContainerState s;
  s.name = "a";
  REQUIRE(store.claim(s, {{"exec.json", "{\"env\":[]}"}, {"hooks.json", "{}"}}));
  REQUIRE(mrun::sys::read_file(store.dir_of("a") + "/exec.json") == "{\"env\":[]}");
  REQUIRE(mrun::sys::read_file(store.dir_of("a") + "/hooks.json") == "{}");
  REQUIRE_FALSE(store.claim(s, {{"exec.json", "other"}}));
  REQUIRE(mrun::sys::read_file(store.dir_of("a") + "/exec.json") == "{\"env\":[]}");
  // Nothing but the files asked for: no temporary left beside them, no scratch left over.
  std::vector<std::string> names;
  DIR* dir = ::opendir(store.dir_of("a").c_str());
  REQUIRE(dir != nullptr);
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"exec.json", "hooks.json", "state.json"});
  REQUIRE(::rmdir((std::string(tmpl) + "/.claims").c_str()) == 0);  // empty
}

TEST_CASE("scratch directories of a killed claim are swept, live ones kept") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  StateStore store(tmpl);
  // pid 1 is alive (kill(1, 0) may be EPERM for non-root: treated as gone is wrong, so
  // use our own pid for the live one and an impossible pid for the dead one).
  std::string live = std::string(tmpl) + "/.claims/claim-" + std::to_string(::getpid()) + "-x";
  std::string dead = std::string(tmpl) + "/.claims/claim-2147483646-y";
  REQUIRE(mrun::sys::make_dirs(live));
  REQUIRE(mrun::sys::make_dirs(dead));
  store.sweep_scratch();
  REQUIRE(mrun::sys::exists(live));
  REQUIRE_FALSE(mrun::sys::exists(dead));
  REQUIRE(store.list().empty());  // dot-named scratch is never listed
}

TEST_CASE("the --rm index names the claimed --rm containers only, until removed") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  StateStore store(tmpl);
  ContainerState kept;
  kept.name = "kept";
  ContainerState rm;
  rm.name = "rm";
  rm.remove_on_exit = true;
  REQUIRE(store.remove_on_exit_names().empty());  // no index yet
  REQUIRE(store.claim(kept));
  REQUIRE(store.claim(rm));
  REQUIRE_FALSE(store.claim(rm));  // a lost claim leaves the winner's entry alone
  REQUIRE(store.remove_on_exit_names() == std::vector<std::string>{"rm"});
  REQUIRE(store.list().size() == 2);  // the index is not a container
  store.remove("rm");
  REQUIRE(store.remove_on_exit_names().empty());
}

TEST_CASE("now_rfc3339 is UTC in RFC 3339 form, as runc writes created") {
  const std::time_t before = std::time(nullptr);
  const std::string now = now_rfc3339();
  const std::time_t after = std::time(nullptr);
  REQUIRE(now.size() == 20);
  REQUIRE(now[4] == '-');
  REQUIRE(now[7] == '-');
  REQUIRE(now[10] == 'T');
  REQUIRE(now[13] == ':');
  REQUIRE(now[16] == ':');
  REQUIRE(now[19] == 'Z');
  std::tm parsed{};
  REQUIRE(::strptime(now.c_str(), "%Y-%m-%dT%H:%M:%SZ", &parsed) != nullptr);
  const std::time_t back = ::timegm(&parsed);
  REQUIRE(back >= before);
  REQUIRE(back <= after);
}

TEST_CASE("rfc3339_utc is gmtime's date, leap days and centuries included") {
  std::vector<std::int64_t> moments{0,
                                    59,
                                    86399,
                                    86400,
                                    951782400 /* 2000-02-29 */,
                                    951868800 /* 2000-03-01 */,
                                    1709164800 /* 2024-02-29 */,
                                    4107542400 /* 2100-03-01: no leap day in 2100 */,
                                    4102444799 /* 2099-12-31T23:59:59 */,
                                    253402300799};
  for (std::int64_t t = 0; t < 4200000000; t += 7777777) moments.push_back(t);
  for (std::int64_t t : moments) {
    const std::time_t as_time = static_cast<std::time_t>(t);
    std::tm utc{};
    REQUIRE(::gmtime_r(&as_time, &utc) != nullptr);
    char want[64];
    std::snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
    INFO(t);
    REQUIRE(rfc3339_utc(t) == want);
  }
}

namespace {
ino_t inode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}
}  // namespace

TEST_CASE("a state write trades places with state.json: whole, and no inode made per write") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  StateStore store(std::string(tmpl) + "/state");
  store.ensure_root();
  ContainerState state;
  state.name = "w";
  state.command = {"/bin/sh", "-c", "a command long enough to be cut if a write tore it"};
  REQUIRE(store.claim(state));
  const std::string current = store.dir_of("w") + "/state.json";
  const auto claimed = inode_of(current);
  state.status = Status::running;
  state.pid = 4242;
  store.write(state);
  REQUIRE(store.read("w")->pid == 4242);
  const auto first = inode_of(current);
  REQUIRE(first != claimed);
  // The claim's file is the next write's: the two inodes take turns.
  REQUIRE(inode_of(current + ".next") == claimed);
  state.command = {"/bin/true"};  // shorter: the reused file is cut to the new length
  store.write(state);
  REQUIRE(inode_of(current) == claimed);
  REQUIRE(store.read("w")->command == state.command);
  state.status = Status::stopped;
  store.write(state);
  REQUIRE(inode_of(current) == first);
  REQUIRE(store.read("w")->status == Status::stopped);
  // A directory with the .next file is still one a claim may reuse.
  store.remove("w", true);
  ContainerState again;
  again.name = "again";
  REQUIRE(store.claim(again));
  REQUIRE(inode_of(store.dir_of("again") + "/state.json") == first);
  REQUIRE(store.read("again")->command.empty());
}

TEST_CASE("an --rm container's state directory is kept and rewritten by the next claim") {
  mrun::test::TempDir temp("state");
  const std::string& tmpl = temp.path;
  const std::string root = std::string(tmpl) + "/state";
  StateStore store(root);
  store.ensure_root();
  ContainerState first;
  first.name = "first-with-a-longer-name";
  first.command = {"/bin/sh", "-c", "a command longer than the next one's"};
  REQUIRE(store.claim(first, {{"exec.json", std::string(900, 'x')}}));
  const auto dir_inode = inode_of(store.dir_of(first.name));
  store.remove(first.name, true);
  REQUIRE_FALSE(store.read(first.name).has_value());
  REQUIRE(store.list().empty());

  ContainerState next;
  next.name = "b";
  next.command = {"/bin/true"};
  REQUIRE(store.claim(next, {{"exec.json", "{}"}}));
  // The kept directory, its files rewritten whole: nothing of the first container's.
  // (A build without spares makes a new one.)
  REQUIRE((inode_of(store.dir_of("b")) == dir_inode) == mrun::kKeepSpares);
  REQUIRE(store.read("b")->command == next.command);
  REQUIRE(mrun::sys::read_file(store.dir_of("b") + "/exec.json") == std::string("{}"));
  const auto state_text = mrun::sys::read_file(store.dir_of("b") + "/state.json");
  REQUIRE(state_text->find("longer") == std::string::npos);
  // A claim without exec.json does not inherit the kept one's.
  store.remove("b", true);
  ContainerState bare;
  bare.name = "c";
  REQUIRE(store.claim(bare));
  REQUIRE_FALSE(mrun::sys::exists(store.dir_of("c") + "/exec.json"));

  // A directory with more than a claim writes (a fifo, hooks) is removed, not kept.
  mrun::sys::write_file_atomic(store.dir_of("c") + "/hooks.json", "[]", 0600);
  store.remove("c", true);
  REQUIRE_FALSE(mrun::sys::exists(store.dir_of("c")));
  // At most kMaxSpareStateDirs are kept.
  for (int i = 0; i < 6; ++i) {
    ContainerState s;
    s.name = "n" + std::to_string(i);
    REQUIRE(store.claim(s));
  }
  for (int i = 0; i < 6; ++i) store.remove("n" + std::to_string(i), true);
  std::size_t kept = 0;
  for (const char* sub : {"/.spare"}) {
    if (DIR* d = ::opendir((root + sub).c_str())) {
      while (struct dirent* e = ::readdir(d)) kept += e->d_name[0] != '.';
      ::closedir(d);
    }
  }
  REQUIRE(kept == StateStore::kMaxSpareStateDirs);
}
