// runtime/sync_channel: the setup conversation typed per direction. A message of the
// other direction, or a number no message has, is refused where it arrives.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "runtime/sync_channel.hpp"

using namespace mrun::runtime;

TEST_CASE("sync channel: each end receives only its own direction's messages") {
  auto [monitor, container] = make_sync_pair();
  container.send(ToMonitor::create_hooks, 7, "x");
  auto m = monitor.receive();
  REQUIRE(m);
  REQUIRE(m->type == ToMonitor::create_hooks);
  REQUIRE(m->value == 7);
  REQUIRE(m->text == "x");
  monitor.send(ToContainer::hooks_done, 0, "{}");
  REQUIRE(container.expect(ToContainer::hooks_done).text == "{}");

  // The container's side forging the monitor's own message (ids_mapped, 1), or a number
  // that is nobody's: refused, not taken for something else.
  SyncSocket forger(mrun::UniqueFd(::dup(container.fd())));
  forger.send(static_cast<std::uint32_t>(ToContainer::ids_mapped), 0, "", -1);
  REQUIRE_THROWS_WITH(monitor.receive(),
                      Catch::Contains("unexpected setup message 1 sent to the monitor"));
  forger.send(999, 0, "", -1);
  REQUIRE_THROWS_WITH(monitor.receive(), Catch::Contains("unexpected setup message 999"));

  // expect() names what came and what was due.
  container.send(ToMonitor::need_fuse);
  REQUIRE_THROWS_WITH(monitor.expect(ToMonitor::created),
                      Catch::Contains("need_fuse") && Catch::Contains("created"));
  container.close();
  forger = SyncSocket();
  REQUIRE_THROWS_WITH(monitor.expect(ToMonitor::created), Catch::Contains("went away"));
}
