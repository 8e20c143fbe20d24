#include <catch2/catch.hpp>
#include <string>

#include "userns/idmap.hpp"
#include "userns/userns_holder.hpp"

using namespace mrun::userns;

TEST_CASE("idmap: root maps to the caller, 1..65535 to the subordinate range") {
  auto plan = plan_id_maps(1000, 1001, {{100000, 65536}}, {{200000, 65536}}, true);
  REQUIRE(plan.kind == MapKind::subordinate);
  REQUIRE(plan.uids == std::vector<IdMapEntry>{{0, 1000, 1}, {1, 100000, 65535}});
  REQUIRE(plan.gids == std::vector<IdMapEntry>{{0, 1001, 1}, {1, 200000, 65535}});
  REQUIRE(format_map(plan.uids) == "0 1000 1\n1 100000 65535\n");
}

TEST_CASE("idmap: several small ranges are used in order, capped at 65535 ids") {
  auto plan = plan_id_maps(1000, 1000, {{100000, 1000}, {500000, 100000}}, {{7, 10}}, true);
  REQUIRE(plan.uids ==
          std::vector<IdMapEntry>{{0, 1000, 1}, {1, 100000, 1000}, {1001, 500000, 64535}});
  REQUIRE(plan.gids == std::vector<IdMapEntry>{{0, 1000, 1}, {1, 7, 10}});
}

TEST_CASE("idmap: no subordinate ids, or --userns=single, gives a single-ID map") {
  auto none = plan_id_maps(1000, 1000, {}, {{1, 10}}, true);
  REQUIRE(none.kind == MapKind::single);
  REQUIRE(none.uids == std::vector<IdMapEntry>{{0, 1000, 1}});
  auto single = plan_id_maps(1000, 1000, {{100000, 65536}}, {{100000, 65536}}, false);
  REQUIRE(single.kind == MapKind::single);
  REQUIRE(single.gids == std::vector<IdMapEntry>{{0, 1000, 1}});
}

TEST_CASE("idmap: newuidmap argv and container-to-host lookups") {
  auto plan = plan_id_maps(1000, 1000, {{100000, 65536}}, {{100000, 65536}}, true);
  REQUIRE(helper_argv("/usr/bin/newuidmap", 42, plan.uids) ==
          std::vector<std::string>{"/usr/bin/newuidmap", "42", "0", "1000", "1", "1", "100000",
                                   "65535"});
  REQUIRE(map_to_host(plan.gids, 0) == 1000);
  REQUIRE(map_to_host(plan.gids, 5) == 100004);
  REQUIRE(map_to_host(plan.gids, 65535) == 165534);
  REQUIRE(map_to_host(plan.gids, 65536) == -1);
  auto single = plan_id_maps(1000, 1000, {}, {}, true);
  REQUIRE(map_to_host(single.gids, 5) == -1);
}

TEST_CASE("the holder's go line: linger and record, nothing else") {
  using mrun::userns::holder_go_line;
  using mrun::userns::parse_holder_go_line;
  int linger = 0;
  std::string record;
  REQUIRE(holder_go_line(60, "/run/user/1000/mrun/.userns") ==
          "go 60 /run/user/1000/mrun/.userns\n");
  REQUIRE(parse_holder_go_line("go 60 /tmp/mrun-1000/.userns", &linger, &record));
  CHECK(linger == 60);
  CHECK(record == "/tmp/mrun-1000/.userns");
  REQUIRE(parse_holder_go_line("go 1 /a dir with spaces/.userns", &linger, &record));
  CHECK(record == "/a dir with spaces/.userns");
  for (const char* bad : {"", "g", "go", "go 60", "go 60 ", "go 0 /x", "go 86401 /x", "go -5 /x",
                          "go 60 relative/.userns", "stop 60 /x"}) {
    INFO(bad);
    CHECK_FALSE(parse_holder_go_line(bad, &linger, &record));
  }
}
