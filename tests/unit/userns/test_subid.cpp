#include <catch2/catch.hpp>
#include <sstream>

#include "userns/subid.hpp"

using mrun::userns::parse_subid;
using mrun::userns::SubIdRange;

TEST_CASE("subid: entries match by name or by uid, in file order") {
  std::istringstream in(
      "# comment\n"
      "alice:100000:65536\n"
      "bob:165536:65536\n"
      "\n"
      "1000:300000:10\n"
      "alice:400000:5\n");
  auto ranges = parse_subid(in, "alice", 1000);
  REQUIRE(ranges == std::vector<SubIdRange>{{100000, 65536}, {300000, 10}, {400000, 5}});
}

TEST_CASE("subid: malformed lines are skipped, not fatal") {
  std::istringstream in(
      "alice:100000\n"             // too few fields
      "alice:abc:65536\n"          // not a number
      "alice:100000:0\n"           // empty range
      "alice:-5:10\n"              // signed
      "alice:4294967290:100\n"     // overflows 32-bit ids
      "alice:1:2:3\n"              // too many fields
      "  alice:200000:1000  \n");  // surrounding blanks are fine
  auto ranges = parse_subid(in, "alice", 1000);
  REQUIRE(ranges == std::vector<SubIdRange>{{200000, 1000}});
}

TEST_CASE("subid: another user's entries are not ours") {
  std::istringstream in("alicex:100000:65536\nalic:1:1\n10000:5:5\n");
  REQUIRE(parse_subid(in, "alice", 1000).empty());
}

TEST_CASE("a free subordinate range: the lowest aligned block no one has") {
  using mrun::userns::free_subid_range;
  using mrun::userns::SubIdRange;
  REQUIRE(free_subid_range({}) == SubIdRange{100000, 65536});
  REQUIRE(free_subid_range({{100000, 65536}}) == SubIdRange{165536, 65536});
  // Overlapping the default block by one id is enough to move past it.
  REQUIRE(free_subid_range({{165535, 10}}) == SubIdRange{231072, 65536});
  REQUIRE(free_subid_range({{100000, 65536}, {165536, 65536}, {400000, 5}}) ==
          SubIdRange{231072, 65536});
  REQUIRE(free_subid_range({{0, 50000}}) == SubIdRange{100000, 65536});
  std::istringstream file("alice:100000:65536\n# comment\nbob:165536:65536\nbad line\n");
  auto all = mrun::userns::parse_all_subid(file);
  REQUIRE(all.size() == 2);
  REQUIRE(free_subid_range(all) == SubIdRange{231072, 65536});
}
