#include <signal.h>

#include <catch2/catch.hpp>

#include "cli/signal_names.hpp"

using mrun::cli::parse_signal;

TEST_CASE("signal names and numbers") {
  REQUIRE(parse_signal("TERM") == SIGTERM);
  REQUIRE(parse_signal("SIGKILL") == SIGKILL);
  REQUIRE(parse_signal("hup") == SIGHUP);
  REQUIRE(parse_signal("9") == SIGKILL);
  REQUIRE_FALSE(parse_signal("0").has_value());
  REQUIRE_FALSE(parse_signal("SIGFOO").has_value());
  REQUIRE_FALSE(parse_signal("999").has_value());
  REQUIRE_FALSE(parse_signal("").has_value());
}
