#include "net/cni_bridge.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/mounts.hpp"
#include "sys/namespaces.hpp"
#include "sys/spawn.hpp"

namespace mrun::net {

namespace {

constexpr const char* cni_version = "1.0.0";

std::string find_plugin(const std::string& type, const std::string& cni_path) {
  for (const auto& dir : split(cni_path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + type;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw Error("--network bridge: CNI plugin \"" + type + "\" not found in " + cni_path, ENOENT,
              "install containernetworking-plugins (apt-get install containernetworking-plugins), "
              "or set CNI_PATH to where the plugins are");
}

// A pipe already holding `text`: the plugin's stdin (a network config is far below
// the pipe's 64 KiB, so the write never blocks).
UniqueFd stdin_with(const std::string& text) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe for a CNI plugin's config");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(write_end.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("write a CNI plugin's config");
    done += static_cast<std::size_t>(n);
  }
  return read_end;
}

// The JSON object a plugin printed (its result, or CNI's error object); a discarded
// value when it printed none.
nlohmann::json json_printed(const std::string& output) {
  auto start = output.find('{');
  if (start == std::string::npos) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(output.substr(start), nullptr, false);
}

// What a plugin said: its error object's msg and details (CNI's error format), else
// its last output line.
std::string plugin_complaint(const std::string& output) {
  nlohmann::json said = json_printed(output);
  if (said.is_object() && said.contains("msg")) {
    std::string text = said.value("msg", "");
    std::string details = said.value("details", "");
    return details.empty() ? text : text + ": " + details;
  }
  std::string trimmed(trim(output));
  auto last = trimmed.rfind('\n');
  return last == std::string::npos ? trimmed : trimmed.substr(last + 1);
}

}  // namespace

nlohmann::json bridge_network_config(const std::vector<PublishSpec>& publish) {
  nlohmann::json bridge = {
      {"type", "bridge"},
      {"bridge", bridge_name},
      {"isGateway", true},
      {"ipMasq", true},
      {"hairpinMode", true},
      {"ipam",
       {{"type", "host-local"},
        {"ranges", nlohmann::json::array({nlohmann::json::array(
                       {{{"subnet", bridge_subnet}, {"gateway", bridge_gateway}}})})},
        {"routes", nlohmann::json::array({{{"dst", "0.0.0.0/0"}}})},
        {"dataDir", bridge_ipam_dir}}}};
  nlohmann::json plugins = nlohmann::json::array({bridge});
  if (!publish.empty()) {
    // snat: the host's own connections to 127.0.0.1:PORT reach the container too.
    plugins.push_back(
        {{"type", "portmap"}, {"capabilities", {{"portMappings", true}}}, {"snat", true}});
  }
  return {{"cniVersion", cni_version}, {"name", "mrun"}, {"plugins", plugins}};
}

nlohmann::json plugin_stdin(const nlohmann::json& list, std::size_t index,
                            const nlohmann::json& previous_result,
                            const std::vector<PublishSpec>& publish) {
  nlohmann::json config = list.at("plugins").at(index);
  config["cniVersion"] = list.at("cniVersion");
  config["name"] = list.at("name");
  if (!previous_result.is_null()) config["prevResult"] = previous_result;
  if (config.value("type", "") == "portmap") {
    nlohmann::json mappings = nlohmann::json::array();
    for (const auto& spec : publish) {
      mappings.push_back({{"hostPort", spec.host_port},
                          {"containerPort", spec.container_port},
                          {"protocol", to_string(spec.protocol)},
                          {"hostIP", spec.host_ip}});
    }
    config["runtimeConfig"] = {{"portMappings", mappings}};
  }
  return config;
}

std::string ipv4_address_of(const nlohmann::json& result) {
  if (!result.is_object() || !result.contains("ips") || !result["ips"].is_array()) return "";
  for (const auto& ip : result["ips"]) {
    std::string cidr = ip.is_object() ? ip.value("address", "") : "";
    std::string address = cidr.substr(0, cidr.find('/'));
    if (valid_ipv4(address)) return address;
  }
  return "";
}

BridgeAttachment::BridgeAttachment(BridgeRequest request) : request_(std::move(request)) {}

namespace {

struct PluginRun {
  int status = 0;
  std::string output;
};

// `netns_path` "": no namespace (CNI allows it for DEL).
PluginRun run_plugin(const std::string& command, const nlohmann::json& config,
                     const BridgeRequest& request, const std::string& netns_path) {
  std::string type = config.value("type", "");
  std::string plugin = find_plugin(type, request.cni_path);
  UniqueFd input = stdin_with(config.dump());
  sys::SpawnOptions options;
  options.stdin_fd = input.get();
  const char* path_var = std::getenv("PATH");
  options.env = std::vector<std::string>{
      "CNI_COMMAND=" + command, "CNI_CONTAINERID=" + request.container_id,
      "CNI_NETNS=" + netns_path, "CNI_IFNAME=" + std::string(bridge_interface),
      "CNI_PATH=" + request.cni_path,
      // iptables (masquerade, portmap) is found through it.
      std::string("PATH=") + (path_var ? path_var : "/usr/sbin:/usr/bin:/sbin:/bin")};
  request.log.debug("CNI " + command + " " + type + ": " + config.dump());
  sys::ProgramResult result = sys::run_program({plugin}, options);
  return {result.status, result.output};
}

void write_record(const BridgeRequest& request, const nlohmann::json& list,
                  const nlohmann::json& result, std::size_t added) {
  if (request.record_path.empty()) return;
  nlohmann::json publish = nlohmann::json::array();
  for (const auto& spec : request.publish) publish.push_back(to_string(spec));
  nlohmann::json record = {{"containerID", request.container_id},
                           {"netns", request.netns_pin},
                           {"cniPath", request.cni_path},
                           {"list", list},
                           {"result", result},
                           {"added", added},
                           {"publish", publish}};
  sys::write_file_atomic(request.record_path, record.dump(), 0600);
}

// DEL of plugins [0, added) in reverse; false if one failed (logged).
bool delete_chain(const BridgeRequest& request, const nlohmann::json& list,
                  const nlohmann::json& result, std::size_t added, const std::string& netns_path) {
  bool ok = true;
  for (std::size_t i = added; i-- > 0;) {
    try {
      nlohmann::json config = plugin_stdin(list, i, result, request.publish);
      PluginRun run = run_plugin("DEL", config, request, netns_path);
      if (run.status != 0) {
        ok = false;
        request.log.warn("--network bridge: CNI DEL of " + config.value("type", "") +
                         " failed: " + plugin_complaint(run.output));
      }
    } catch (const std::exception& e) {
      ok = false;
      request.log.warn(std::string("--network bridge: CNI DEL: ") + e.what());
    }
  }
  return ok;
}

// The pinned namespace is a bind mount of nsfs on a file of the state directory.
bool pinned(const std::string& path) {
  if (path.empty()) return false;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return fd && sys::namespace_type(fd.get()) == CLONE_NEWNET;
}

void unpin(const std::string& path, const Logger& log) noexcept {
  if (path.empty()) return;
  try {
    if (pinned(path)) sys::umount_detach(path);
  } catch (const std::exception& e) {
    log.warn(std::string("--network bridge: ") + e.what());
  }
  ::unlink(path.c_str());
}

}  // namespace

void release_leftover_bridge(const std::string& record_path, const Logger& log) noexcept {
  try {
    auto text = sys::read_file(record_path);
    if (!text) return;
    nlohmann::json record = nlohmann::json::parse(*text, nullptr, false);
    if (!record.is_object() || !record.contains("list")) {
      ::unlink(record_path.c_str());
      return;
    }
    BridgeRequest request;
    request.container_id = record.value("containerID", "");
    request.cni_path = record.value("cniPath", std::string(default_cni_path));
    for (const auto& spec : record.value("publish", nlohmann::json::array())) {
      request.publish.push_back(parse_publish(spec.get<std::string>()));
    }
    request.log = log;
    log.debug("--network bridge: releasing the leftover lease of " + request.container_id);
    // The namespace outlived the monitor, pinned: DEL finds the veth and the
    // masquerade rules of its address (the bridge plugin removes them only from there).
    std::string netns = record.value("netns", "");
    bool ok = delete_chain(request, record["list"], record.value("result", nlohmann::json()),
                           record.value("added", std::size_t{0}), pinned(netns) ? netns : "");
    unpin(netns, log);
    if (ok) ::unlink(record_path.c_str());
  } catch (const std::exception& e) {
    log.warn(std::string("--network bridge: releasing a leftover: ") + e.what());
  }
}

std::unique_ptr<BridgeAttachment> BridgeAttachment::attach(const BridgeRequest& given) {
  BridgeRequest request = given;
  if (request.cni_path.empty()) {
    const char* env = std::getenv("CNI_PATH");
    request.cni_path = env && *env ? env : default_cni_path;
  }
  // Checked before anything is added: a missing plugin must not leave half a network.
  nlohmann::json list = bridge_network_config(request.publish);
  for (const auto& plugin : list["plugins"]) {
    find_plugin(plugin.value("type", ""), request.cni_path);
  }
  sys::ensure_private_dir(bridge_ipam_dir, "CNI lease directory", "remove it; mrun recreates it");

  // Pinned (as `ip netns add` and podman do) on a file next to the record, so that DEL
  // still finds the namespace after the container's last process, or mrun, is gone.
  std::string ns_path = "/proc/" + std::to_string(request.container_pid) + "/ns/net";
  request.netns_pin = request.record_path.empty() ? ns_path : request.record_path + ".netns";
  std::unique_ptr<BridgeAttachment> self(new BridgeAttachment(request));
  if (!request.record_path.empty()) {
    sys::write_file_atomic(request.netns_pin, "", 0600);
    self->pin_ = request.netns_pin;
    sys::bind_mount(ns_path, request.netns_pin, false);
  }
  self->list_ = list;
  nlohmann::json previous;  // null before the first plugin
  for (std::size_t i = 0; i < list["plugins"].size(); ++i) {
    nlohmann::json config = plugin_stdin(list, i, previous, request.publish);
    // Recorded before it runs: a plugin's partial work is undone by its DEL (CNI's
    // rule), by this process or, were it killed now, by the next remove of the record.
    self->added_ = i + 1;
    write_record(request, list, previous, self->added_);
    PluginRun run = run_plugin("ADD", config, request, request.netns_pin);
    std::string type = config.value("type", "");
    nlohmann::json result = run.status == 0 ? json_printed(run.output) : nlohmann::json();
    if (run.status != 0 || !result.is_object()) {
      throw Error(
          "--network bridge: CNI plugin " + type + " failed: " + plugin_complaint(run.output), 0,
          "see the plugin's message; --network slirp4netns needs no host bridge");
    }
    previous = result;
    self->result_ = result;
    write_record(request, list, previous, self->added_);
  }
  self->address_ = ipv4_address_of(previous);
  if (self->address_.empty()) {
    throw Error("--network bridge: the CNI plugins gave the container no IPv4 address", EPROTO,
                "check " + std::string(bridge_ipam_dir) + " (host-local's leases)");
  }
  return self;
}

BridgeAttachment::~BridgeAttachment() {
  stop();
}

void BridgeAttachment::stop() noexcept {
  if (stopped_) return;
  stopped_ = true;
  // A failed ADD's last result is the previous plugin's: DEL gets what there is.
  bool ok = delete_chain(request_, list_, result_, added_, request_.netns_pin);
  unpin(pin_, request_.log);
  if (ok && !request_.record_path.empty()) ::unlink(request_.record_path.c_str());
}

}  // namespace mrun::net
