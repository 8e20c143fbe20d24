// The sealed copy of mrun that exec runs from (CVE-2019-5736): the pure helpers, and the
// kernel's memfd seals through the same sys:: calls exec uses.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "runtime/cloned_binary.hpp"
#include "sys/syscalls.hpp"

using namespace mrun;

TEST_CASE("cmdline words are split at NULs, empty words kept") {
  using runtime::split_cmdline;
  CHECK(split_cmdline(std::string("mrun\0exec\0c1\0\0x\0", 17) ==
        std::vector<std::string>{"mrun", "exec", "c1", "", "x"});
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
  sys::copy_file_contents(self.get(), copy.get(), "the test binary");
  CHECK(::lseek(copy.get(), 0, SEEK_END) == ::lseek(self.get(), 0, SEEK_END));
  CHECK(sys::file_seals(copy.get()) == 0);
  sys::add_seals(copy.get(), runtime::protective_seals());
  CHECK(runtime::is_sealed_copy(sys::file_seals(copy.get())));
  CHECK(::pwrite(copy.get(), "x", 1, 0) == -1);
  CHECK(errno == EPERM);
  CHECK(::ftruncate(copy.get(), 1) == -1);
  CHECK_THROWS_AS(sys::add_seals(copy.get(), F_SEAL_FUTURE_WRITE), Error);
}
