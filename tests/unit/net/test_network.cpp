// Network planning in pure code: publish specs, the helpers' command lines and API
// requests, and the generated /etc files. No privilege, no helper started.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "net/cni_bridge.hpp"
#include "net/network.hpp"
#include "net/network_files.hpp"
#include "net/publish_spec.hpp"
#include "runtime/config.hpp"

using mrun::Error;
using namespace mrun::net;

namespace {
bool has_pair(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == a && argv[i + 1] == b) return true;
  }
  return false;
}
bool has(const std::vector<std::string>& argv, const std::string& a) {
  return std::find(argv.begin(), argv.end(), a) != argv.end();
}
}  // namespace

TEST_CASE("publish: HOSTPORT:CTRPORT defaults to every address and tcp") {
  auto spec = parse_publish("8080:80");
  CHECK(spec.host_ip.empty());
  CHECK(spec.host_port == 8080);
  CHECK(spec.container_port == 80);
  CHECK(spec.protocol == Protocol::tcp);
  CHECK(to_string(spec) == "8080:80/tcp");
}

TEST_CASE("publish: IP and protocol") {
  auto spec = parse_publish("127.0.0.1:5353:53/udp");
  CHECK(spec.host_ip == "127.0.0.1");
  CHECK(spec.host_port == 5353);
  CHECK(spec.container_port == 53);
  CHECK(spec.protocol == Protocol::udp);
  CHECK(to_string(spec) == "127.0.0.1:5353:53/udp");
  CHECK(parse_publish("1:65535/tcp").container_port == 65535);
}

TEST_CASE("publish: malformed specs and out-of-range ports are refused with the form") {
  for (const char* bad : {"",
                          "80",
                          "a:80",
                          "80:b",
                          "1:2:3:4",
                          "127.0.0.1:80",
                          "80:80/sctp",
                          "80:80/",
                          "0:80",
                          "80:0",
                          "65536:80",
                          "80:70000",
                          "99999999999999999999999:80",
                          "-1:80",
                          "+80:80",
                          "256.0.0.1:80:80",
                          "1.2.3:80:80",
                          "localhost:80:80",
                          " 80:80",
                          "[::1]:80:80"}) {
    INFO(bad);
    try {
      parse_publish(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.errno_value() == EINVAL);
      CHECK(std::string(e.what()).find("publish \"" + std::string(bad) + "\"") !=
            std::string::npos);
      CHECK(e.hint().find("[IP:]HOSTPORT:CTRPORT") != std::string::npos);
    }
  }
}

TEST_CASE("publish: out of range says so") {
  try {
    parse_publish("127.0.0.1:70000:80");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("host port 70000 is out of range 1-65535") !=
          std::string::npos);
  }
}

TEST_CASE("ipv4 validation") {
  CHECK(valid_ipv4("127.0.0.1"));
  CHECK(valid_ipv4("0.0.0.0"));
  CHECK_FALSE(valid_ipv4("127.0.0"));
  CHECK_FALSE(valid_ipv4("127.0.0.1.1"));
  CHECK_FALSE(valid_ipv4("127.0.0.256"));
  CHECK_FALSE(valid_ipv4("127..0.1"));
  CHECK_FALSE(valid_ipv4("1277.0.0.1"));
}

TEST_CASE("slirp4netns add_hostfwd request") {
  auto j = nlohmann::json::parse(add_hostfwd_request(parse_publish("127.0.0.1:8080:80")));
  CHECK(j["execute"] == "add_hostfwd");
  CHECK(j["arguments"]["proto"] == "tcp");
  CHECK(j["arguments"]["host_addr"] == "127.0.0.1");
  CHECK(j["arguments"]["host_port"] == 8080);
  CHECK(j["arguments"]["guest_addr"] == "10.0.2.100");
  CHECK(j["arguments"]["guest_port"] == 80);
  auto any = nlohmann::json::parse(add_hostfwd_request(parse_publish("5353:53/udp")));
  CHECK(any["arguments"]["host_addr"] == "0.0.0.0");
  CHECK(any["arguments"]["proto"] == "udp");
}

TEST_CASE("pasta: rootless joins by PID, forwards nothing unless published") {
  NetworkRequest r;
  r.container_pid = 4242;
  auto argv = pasta_arguments(r, "/usr/bin/pasta", "/s/pasta.pid", -1);
  CHECK(argv.front() == "/usr/bin/pasta");
  CHECK(argv.back() == "4242");
  CHECK(has(argv, "--config-net"));
  CHECK(has(argv, "--foreground"));
  CHECK(has(argv, "--ipv4-only"));
  CHECK(has(argv, "--no-map-gw"));
  CHECK(has_pair(argv, "--address", "10.0.2.100"));
  CHECK(has_pair(argv, "--netmask", "24"));
  CHECK(has_pair(argv, "--gateway", "10.0.2.2"));
  CHECK(has_pair(argv, "--dns-forward", "10.0.2.3"));
  CHECK(has_pair(argv, "--mtu", "65520"));
  CHECK(has_pair(argv, "--ns-ifname", "tap0"));
  CHECK(has_pair(argv, "--pid", "/s/pasta.pid"));
  CHECK(has_pair(argv, "--tcp-ports", "none"));
  CHECK(has_pair(argv, "--udp-ports", "none"));
  CHECK(has_pair(argv, "--tcp-ns", "none"));
  CHECK(has_pair(argv, "--udp-ns", "none"));
  CHECK_FALSE(has(argv, "--runas"));
}

TEST_CASE("pasta: publish and host loopback map to -t/-u and the gateway mapping") {
  NetworkRequest r;
  r.container_pid = 1;
  r.allow_host_loopback = true;
  r.publish = {parse_publish("127.0.0.1:8080:80"), parse_publish("5353:53/udp")};
  auto argv = pasta_arguments(r, "pasta", "p", -1);
  CHECK(has_pair(argv, "--tcp-ports", "127.0.0.1/8080:80"));
  CHECK(has_pair(argv, "--udp-ports", "5353:53"));
  CHECK_FALSE(has_pair(argv, "--tcp-ports", "none"));
  CHECK_FALSE(has_pair(argv, "--udp-ports", "none"));
  CHECK_FALSE(has(argv, "--no-map-gw"));
}

TEST_CASE("pasta: rootful gets the namespace as an fd and keeps root") {
  NetworkRequest r;
  r.container_pid = 77;
  r.rootless = false;
  auto argv = pasta_arguments(r, "pasta", "p", 9);
  CHECK(has_pair(argv, "--runas", "0:0"));
  CHECK(has_pair(argv, "--netns", "/proc/self/fd/9"));
  CHECK_FALSE(has(argv, "77"));
}

TEST_CASE("resolv.conf and hosts") {
  CHECK(render_resolv_conf({"web"}) == "nameserver 10.0.2.3\n");
  auto hosts = render_hosts({"web", false});
  CHECK(hosts.find("127.0.0.1\tlocalhost\n") != std::string::npos);
  CHECK(hosts.find("10.0.2.100\tweb\n") != std::string::npos);
  CHECK(hosts.find("host.containers.internal") == std::string::npos);
  CHECK(render_hosts({"web", true}).find("10.0.2.2\thost.containers.internal\n") !=
        std::string::npos);
}

TEST_CASE("resolv.conf and hosts for a bridge: the host's servers, off its loopback") {
  NetworkFilesInput input{"web"};
  input.address = "10.90.0.7";
  input.host_resolv_conf =
      "# generated\nnameserver 127.0.0.53\nnameserver 192.0.2.1\nsearch example.org\n"
      "options edns0\nnameserver ::1\n";
  CHECK(render_resolv_conf(input) == "nameserver 192.0.2.1\nsearch example.org\noptions edns0\n");
  CHECK(render_hosts(input).find("10.90.0.7\tweb\n") != std::string::npos);
  input.host_resolv_conf = "nameserver 127.0.0.53\n";
  std::string only_loopback = render_resolv_conf(input);
  CHECK(only_loopback.find("nameserver") == std::string::npos);
  CHECK(only_loopback.find("loopback") != std::string::npos);
}

TEST_CASE("CNI bridge: the plugin chain and what each plugin reads") {
  auto plain = bridge_network_config({});
  REQUIRE(plain["plugins"].size() == 1);
  CHECK(plain["plugins"][0]["type"] == "bridge");
  CHECK(plain["plugins"][0]["bridge"] == "mrun0");
  CHECK(plain["plugins"][0]["ipam"]["type"] == "host-local");
  CHECK(plain["plugins"][0]["ipam"]["ranges"][0][0]["subnet"] == "10.90.0.0/24");

  std::vector<PublishSpec> publish{parse_publish("127.0.0.1:8080:80"), parse_publish("53:53/udp")};
  auto list = bridge_network_config(publish);
  REQUIRE(list["plugins"].size() == 2);
  CHECK(list["plugins"][1]["type"] == "portmap");

  auto first = plugin_stdin(list, 0, nullptr, publish);
  CHECK(first["cniVersion"] == list["cniVersion"]);
  CHECK(first["name"] == "mrun");
  CHECK_FALSE(first.contains("prevResult"));
  CHECK_FALSE(first.contains("runtimeConfig"));

  nlohmann::json result = {{"cniVersion", "1.0.0"},
                           {"ips", {{{"address", "10.90.0.9/24"}, {"gateway", "10.90.0.1"}}}}};
  auto second = plugin_stdin(list, 1, result, publish);
  CHECK(second["prevResult"] == result);
  auto mappings = second["runtimeConfig"]["portMappings"];
  REQUIRE(mappings.size() == 2);
  CHECK(mappings[0] == nlohmann::json({{"hostPort", 8080},
                                       {"containerPort", 80},
                                       {"protocol", "tcp"},
                                       {"hostIP", "127.0.0.1"}}));
  CHECK(mappings[1]["protocol"] == "udp");
  CHECK(mappings[1]["hostIP"] == "");

  CHECK(ipv4_address_of(result) == "10.90.0.9");
  CHECK(ipv4_address_of({{"ips", {{{"address", "fd00::2/64"}}}}}) == "");
  CHECK(ipv4_address_of(nlohmann::json::object()) == "");
}

TEST_CASE("explain_bind_failure names a port in use (loopback only)") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  PublishSpec spec;
  spec.host_ip = "127.0.0.1";
  spec.host_port = ntohs(addr.sin_port);
  spec.container_port = 80;
  CHECK(explain_bind_failure(spec) ==
        "host port " + std::to_string(spec.host_port) + "/tcp is already in use");
  ::close(fd);
  CHECK(explain_bind_failure(spec).empty());
}

TEST_CASE("config: --publish and --allow-host-loopback need a helper-run network") {
  using namespace mrun::runtime;
  ContainerConfig c;
  c.name = "c";
  c.rootfs = "/r";
  c.process.args = {"/bin/true"};
  c.run.publish = {parse_publish("8080:80")};
  for (auto mode : {NetworkMode::none, NetworkMode::host}) {
    c.network = mode;
    CHECK_THROWS_AS(validate(c), Error);
  }
  c.network = NetworkMode::slirp4netns;
  CHECK_NOTHROW(validate(c));
  c.network = NetworkMode::pasta;
  CHECK_NOTHROW(validate(c));
  c.run.publish.clear();
  c.run.allow_host_loopback = true;
  c.network = NetworkMode::none;
  CHECK_THROWS_AS(validate(c), Error);
  CHECK(parse_network_mode("slirp4netns") == NetworkMode::slirp4netns);
  CHECK(parse_network_mode("pasta") == NetworkMode::pasta);
  CHECK(parse_network_mode("bridge") == NetworkMode::bridge);
  CHECK_FALSE(parse_network_mode("frobnet"));
  // A bridge publishes through portmap; the host's loopback is a user-mode idea.
  c.network = NetworkMode::bridge;
  CHECK_THROWS_AS(validate(c), Error);
  c.run.allow_host_loopback = false;
  c.run.publish = {parse_publish("8080:80")};
  CHECK_NOTHROW(validate(c));
  CHECK(to_string(NetworkMode::pasta) == "pasta");
}
