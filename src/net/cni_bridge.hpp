// Rootful `--network bridge`: the container's own network namespace joined to a host
// bridge by a veth pair, with an address from a host-local pool, through the CNI
// plugins Debian packages (containernetworking-plugins), as podman 3 and containerd's
// CRI plugin do it. mrun writes no netlink or iptables code of its own for this: the
// plugins are the tested implementation every engine shares.
//
//   plugin chain  bridge (bridge mrun0, gateway 10.90.0.1, masquerade, hairpin)
//                 + host-local IPAM (10.90.0.0/24, leases under /run/mrun/cni)
//                 + portmap, only when ports are published (-p)
//
// ADD runs each plugin in order, each given the previous one's result; DEL runs them
// in reverse with the final result, on the container's network namespace pinned by a
// bind mount in its state directory, so the lease, the port rules and the masquerade
// rules go even after the container, or mrun itself (then at `mrun delete`), is gone.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/unique_fd.hpp"
#include "net/attached_network.hpp"
#include "net/publish_spec.hpp"

namespace mrun::net {

inline constexpr const char* bridge_name = "mrun0";
inline constexpr const char* bridge_subnet = "10.90.0.0/24";
inline constexpr const char* bridge_gateway = "10.90.0.1";
inline constexpr const char* bridge_interface = "eth0";
// host-local's leases: on a tmpfs, so that they go with the network namespaces at reboot.
inline constexpr const char* bridge_ipam_dir = "/run/mrun/cni";
// Where the plugins are looked for, in order (Debian's package, then the upstream layout).
inline constexpr const char* default_cni_path = "/usr/lib/cni:/opt/cni/bin";

// The network configuration list (pure; tested): the plugins above, portmap only
// when `publish` is not empty.
nlohmann::json bridge_network_config(const std::vector<PublishSpec>& publish);

// What plugin `index` of `list` reads on stdin (pure; tested): its own object with the
// list's cniVersion and name, the previous result when there is one, and portmap's
// runtimeConfig.portMappings.
nlohmann::json plugin_stdin(const nlohmann::json& list, std::size_t index,
                            const nlohmann::json& previous_result,
                            const std::vector<PublishSpec>& publish);

// The container's IPv4 address ("10.90.0.5") from a CNI result; "" when it has none.
std::string ipv4_address_of(const nlohmann::json& result);

struct BridgeRequest {
  pid_t container_pid = -1;  // its network namespace gets the veth's other end
  std::string container_id;  // CNI_CONTAINERID: the lease's owner
  std::vector<PublishSpec> publish;
  std::string cni_path;  // empty: $CNI_PATH, else default_cni_path
  // Where the chain and its result are kept while attached (the container's state
  // directory): a monitor killed before DEL leaves them for release_leftover_bridge.
  std::string record_path;
  // The namespace as the plugins see it: RECORD_PATH.netns, a bind mount of the
  // container's (set by attach; /proc/PID/ns/net without a record).
  std::string netns_pin;
  Logger log;
};

// DEL through the plugins of a record a killed monitor left (its namespace is gone:
// CNI_NETNS is empty, which DEL allows): the lease and the port rules go. No record:
// nothing to do. Never throws.
void release_leftover_bridge(const std::string& record_path, const Logger& log) noexcept;

class BridgeAttachment final : public AttachedNetwork {
 public:
  // Runs ADD; throws a one-line Error naming the plugin and what it said. Whatever an
  // earlier plugin added is deleted again before it throws.
  static std::unique_ptr<BridgeAttachment> attach(const BridgeRequest& request);
  ~BridgeAttachment() override;
  BridgeAttachment(const BridgeAttachment&) = delete;
  BridgeAttachment& operator=(const BridgeAttachment&) = delete;

  const std::string& address() const noexcept { return address_; }
  const nlohmann::json& result() const noexcept { return result_; }

  void watch(const Logger&) override {}  // nothing runs beside the container
  // DEL through every plugin, in reverse; idempotent; never throws (failures are
  // logged: a lease left behind is reclaimed by host-local's next wrap-around).
  void stop() noexcept override;

 private:
  explicit BridgeAttachment(BridgeRequest request);

  BridgeRequest request_;
  std::string pin_;  // the bind mount to undo, once made
  nlohmann::json list_;
  std::size_t added_ = 0;  // plugins whose ADD succeeded
  nlohmann::json result_;
  std::string address_;
  bool stopped_ = false;
};

}  // namespace mrun::net
