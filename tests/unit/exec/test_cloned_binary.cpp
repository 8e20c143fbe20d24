// The sealed copy of mrun that exec runs from (CVE-2019-5736): the pure helpers, and the
// kernel's memfd seals through the same sys:: calls exec uses.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "exec/cloned_binary.hpp"
#include "sys/fs.hpp"
#include "sys/sealed_memfd.hpp"

using namespace mrun;

TEST_CASE("cmdline words are split at NULs, empty words kept") {
  using runtime::split_cmdline;
  const std::vector<std::string> words{"mrun", "exec", "c1", "", "x"};
  CHECK(split_cmdline(std::string("mrun\0exec\0c1\0\0x\0", 16)) == words);
  CHECK(split_cmdline("").empty());
}

TEST_CASE("only all four protective seals make a sealed copy") {
  using runtime::is_sealed_copy;
  CHECK_FALSE(is_sealed_copy(-1));
  CHECK_FALSE(is_sealed_copy(0));
  CHECK_FALSE(is_sealed_copy(F_SEAL_WRITE | F_SEAL_SEAL));
  CHECK(is_sealed_copy(runtime::protective_seals()));
  CHECK(is_sealed_copy(runtime::protective_seals() | F_SEAL_FUTURE_WRITE));
}

TEST_CASE("a sealed memfd copy refuses writes and growth; a plain file has no seals") {
  UniqueFd self(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  REQUIRE(self);
  CHECK(sys::file_seals(self.get()) == -1);
  CHECK_FALSE(runtime::running_from_sealed_copy());

  UniqueFd copy = sys::memfd_create_executable("unit-copy");
  auto size = static_cast<std::size_t>(::lseek(self.get(), 0, SEEK_END));
  ::lseek(self.get(), 0, SEEK_SET);
  sys::copy_file_contents(self.get(), copy.get(), size, "the test binary");
  CHECK(::lseek(copy.get(), 0, SEEK_END) == static_cast<off_t>(size));
  CHECK(sys::file_seals(copy.get()) == 0);
  sys::add_seals(copy.get(), runtime::protective_seals());
  CHECK(runtime::is_sealed_copy(sys::file_seals(copy.get())));
  CHECK(::pwrite(copy.get(), "x", 1, 0) == -1);
  CHECK(errno == EPERM);
  CHECK(::ftruncate(copy.get(), 1) == -1);
  CHECK_THROWS_AS(sys::add_seals(copy.get(), F_SEAL_FUTURE_WRITE), Error);
}

TEST_CASE("the loadable part of an ELF file ends with its last segment") {
  using runtime::loadable_size;
  auto exe = sys::read_file("/proc/self/exe");
  REQUIRE(exe);
  auto size = loadable_size(std::string_view(*exe).substr(0, 65536), exe->size());
  REQUIRE(size);
  CHECK(*size <= exe->size());
  CHECK(*size > 4096);
  CHECK_FALSE(loadable_size("#!/bin/sh\n", 10));
  CHECK_FALSE(loadable_size(std::string_view(*exe).substr(0, 64), exe->size()));  // no phdrs
  CHECK_FALSE(loadable_size(std::string_view(*exe).substr(0, 65536), 100));       // past the end
}

TEST_CASE("the copy is needed only where some id of the container could write the binary") {
  using runtime::BinaryAccess;
  using runtime::container_may_write_binary;
  // Rootless: 0 -> the caller (1000), 1..65535 -> 100000..165534.
  const std::string uid_map =
      "         0       1000          1\n         1     100000      65535\n";
  const std::string gid_map = "0 1000 1\n1 100000 65535\n";
  BinaryAccess installed{0, 0, 0100755, false};  // root's /usr/local/bin/mrun
  REQUIRE_FALSE(container_may_write_binary(installed, uid_map, gid_map));
  BinaryAccess build_tree{1000, 1000, 0100755, false};  // the caller's own: container root's
  REQUIRE(container_may_write_binary(build_tree, uid_map, gid_map));
  BinaryAccess subordinate_owner{100005, 0, 0100555, false};  // container uid 6 may chmod it
  REQUIRE(container_may_write_binary(subordinate_owner, uid_map, gid_map));
  BinaryAccess world_writable{0, 0, 0100757, false};
  REQUIRE(container_may_write_binary(world_writable, uid_map, gid_map));
  BinaryAccess group_mapped{0, 1000, 0100775, false};
  REQUIRE(container_may_write_binary(group_mapped, uid_map, gid_map));
  BinaryAccess group_unmapped{0, 50, 0100775, false};
  REQUIRE_FALSE(container_may_write_binary(group_unmapped, uid_map, gid_map));
  BinaryAccess acl{0, 0, 0100755, true};  // an ACL may name anyone
  REQUIRE(container_may_write_binary(acl, uid_map, gid_map));
  // The range's edges: 165534 is mapped, 165535 is not.
  REQUIRE(container_may_write_binary({165534, 0, 0100555, false}, uid_map, gid_map));
  REQUIRE_FALSE(container_may_write_binary({165535, 0, 0100555, false}, uid_map, gid_map));
  // Rootful without a user namespace: the identity map covers every owner.
  REQUIRE(container_may_write_binary(installed, "0 0 4294967295\n", "0 0 4294967295\n"));
}
