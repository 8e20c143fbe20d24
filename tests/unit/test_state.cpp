#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "runtime/state.hpp"
#include "sys/fs.hpp"
#include "sys/syscalls.hpp"

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
  auto back = state_from_json(state_to_json(s));
  REQUIRE(back.name == "c1");
  REQUIRE(back.status == Status::running);
  REQUIRE(back.pid == 42);
  REQUIRE(back.pid_start == 12345);
  REQUIRE(back.command == s.command);
  REQUIRE(back.remove_on_exit);
  REQUIRE(back.subordinate_ids);
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
  char tmpl[] = "/tmp/mrun-unit-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string root = std::string(tmpl) + "/state";
  StateStore store(root);
  store.ensure_root();
  REQUIRE(store.claim("a"));
  REQUIRE_FALSE(store.claim("a"));
  ContainerState s;
  s.name = "a";
  store.write(s);
  REQUIRE(store.read("a")->name == "a");
  REQUIRE(store.list().size() == 1);
  store.remove("a");
  REQUIRE_FALSE(store.read("a").has_value());
  REQUIRE(mrun::sys::remove_tree(tmpl));
}
