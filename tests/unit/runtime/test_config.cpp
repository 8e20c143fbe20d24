#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "base/error.hpp"
#include "runtime/config.hpp"
#include "runtime/privilege.hpp"

using namespace mrun::runtime;

namespace {
ContainerConfig valid_config() {
  ContainerConfig c;
  c.name = "c1";
  c.rootfs = "/srv/rootfs";
  c.process.args = {"/bin/sh"};
  return c;
}
}  // namespace

TEST_CASE("container names follow podman's rule") {
  REQUIRE(valid_container_name("web-1.test_a"));
  REQUIRE_FALSE(valid_container_name(""));
  REQUIRE_FALSE(valid_container_name("-x"));
  REQUIRE_FALSE(valid_container_name("a/b"));
  REQUIRE_FALSE(valid_container_name("../x"));
  REQUIRE_FALSE(valid_container_name(std::string(65, 'a')));
}

TEST_CASE("config validation names the field and the fix") {
  REQUIRE_NOTHROW(validate(valid_config()));
  auto c = valid_config();
  c.rootfs = "relative";
  REQUIRE_THROWS_WITH(validate(c), Catch::Contains("must be absolute"));
  c = valid_config();
  c.process.cwd = "tmp";
  REQUIRE_THROWS_WITH(validate(c), Catch::Contains("working directory"));
  c = valid_config();
  c.process.terminal = c.run.detach = true;
  REQUIRE_THROWS_WITH(validate(c), Catch::Contains("--tty cannot be combined with --detach"));
  c = valid_config();
  c.name = "bad name";
  try {
    validate(c);
    FAIL("expected an error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 125);
    REQUIRE_THAT(e.what(), Catch::Contains("invalid container name"));
  }
}

TEST_CASE("overlay and network modes parse") {
  REQUIRE(parse_overlay_mode("fuse") == OverlayMode::fuse);
  REQUIRE_FALSE(parse_overlay_mode("fusion").has_value());
  REQUIRE(parse_network_mode("host") == NetworkMode::host);
  REQUIRE(to_string(OverlayMode::automatic) == "auto");
}

TEST_CASE("the privilege model keeps rootful and rootless differences in one place") {
  auto rootless = privilege_model_for(1000);
  REQUIRE(rootless.new_user_namespace);
  REQUIRE_FALSE(rootless.can_mknod);
  REQUIRE_FALSE(rootless.can_attach_device_filter);
  REQUIRE_FALSE(rootless.may_write_any_id_map);
  auto rootful = privilege_model_for(0);
  REQUIRE_FALSE(rootful.new_user_namespace);
  REQUIRE(rootful.can_mknod);
  REQUIRE(rootful.default_state_root == "/run/mrun");
  auto config = valid_config();
  config.run.userns = UsernsMode::single;
  REQUIRE(privilege_model_for(0, &config).new_user_namespace);
  // Root of another user namespace (rootless podman's): stays in it, rootless otherwise.
  auto nested = privilege_model_for(0, nullptr, false);
  REQUIRE(nested.nested);
  REQUIRE_FALSE(nested.rootful);
  REQUIRE_FALSE(nested.new_user_namespace);
  REQUIRE_FALSE(nested.can_mknod);
  REQUIRE_FALSE(nested.host_capabilities);
  REQUIRE_FALSE(nested.may_write_any_id_map);
  REQUIRE(nested.default_state_root != "/run/mrun");
}

TEST_CASE("a generated container name is a valid one, and a fresh one each time") {
  const std::string a = generated_container_name();
  const std::string b = generated_container_name();
  REQUIRE(valid_container_name(a));
  REQUIRE(a.size() == 13);
  REQUIRE(a.rfind("mrun-", 0) == 0);
  REQUIRE(a != b);  // 32 random bits: equal once in four billion runs
}
