// runtime/exec_fifo: the record a created container leaves `mrun start`: the go byte, or
// the error that stopped it, which start prints as one line.
#include <climits>
#include <string>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "init/exec_fifo.hpp"

using namespace mrun::runtime;

TEST_CASE("exec fifo: the go byte starts, a failure record is the container's error") {
  REQUIRE_NOTHROW(check_start_record("0", "c1"));
  std::string record = start_failure_record("hook startContainer[0] /x: exited with status 3");
  try {
    check_start_record(record, "c1");
    FAIL("a failure record must throw");
  } catch (const mrun::Error& e) {
    REQUIRE(std::string(e.what()) == "hook startContainer[0] /x: exited with status 3");
    REQUIRE(e.exit_status() == mrun::exit_code::runtime_error);
  }
}

TEST_CASE("exec fifo: nothing, or anything but a record, is a container that died") {
  for (std::string_view read :
       {std::string_view(), std::string_view("00"), std::string_view("x"), std::string_view("!")}) {
    REQUIRE_THROWS_WITH(check_start_record(read, "c1"),
                        Catch::Contains("container c1 did not take the start signal"));
  }
}

TEST_CASE("exec fifo: a failure record fits one pipe write and prints as one line") {
  std::string record = start_failure_record(std::string(2 * PIPE_BUF, 'a'));
  REQUIRE(record.size() == PIPE_BUF);
  REQUIRE_THROWS_WITH(check_start_record(start_failure_record("a\nb\x1b[2Jc"), "c1"),
                      Catch::Equals("a b [2Jc"));
}
