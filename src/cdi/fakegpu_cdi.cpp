#include "cdi/fakegpu_cdi.hpp"

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::cdi {

namespace {
// CDI env edits replace a variable (they cannot append), so PATH is the usual default
// followed by the driver's bin directory; an image with its own PATH loses it here,
// as it does with any CDI spec that sets PATH.
constexpr const char* base_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const char* load_fix = "load the driver (modprobe fakegpu, or insmod fakegpu.ko) first";

// The /dev/fakegpuN nodes by number, and /dev/fakegpuctl; throws when either is missing.
std::pair<std::vector<std::pair<std::uint64_t, const mount::HostDevice*>>, const mount::HostDevice*>
split_nodes(const std::vector<mount::HostDevice>& nodes) {
  std::vector<std::pair<std::uint64_t, const mount::HostDevice*>> gpus;
  const mount::HostDevice* ctl = nullptr;
  for (const auto& node : nodes) {
    std::string name = node.spec.host_path.substr(node.spec.host_path.rfind('/') + 1);
    if (name == "fakegpuctl") {
      ctl = &node;
    } else if (auto n = parse_u64(name.substr(std::min<std::size_t>(7, name.size())));
               n && starts_with(name, "fakegpu") && name.size() > 7) {
      gpus.emplace_back(*n, &node);
    }
  }
  if (gpus.empty()) {
    throw Error("cdi generate: no /dev/fakegpuN device on this host", ENODEV, load_fix);
  }
  if (ctl == nullptr) throw Error("cdi generate: /dev/fakegpuctl does not exist", ENODEV, load_fix);
  std::sort(gpus.begin(), gpus.end());
  return {gpus, ctl};
}

DeviceNode node_edit(const mount::HostDevice& node) {
  DeviceNode n;
  n.path = node.spec.host_path;
  n.type = "c";
  n.major = node.major;
  n.minor = node.minor;
  n.permissions = "rwm";
  return n;
}
}  // namespace

Spec fakegpu_spec(const std::vector<mount::HostDevice>& nodes,
                  const mount::GpuUserspace& userspace) {
  auto [gpus, ctl] = split_nodes(nodes);
  Spec spec;
  spec.version = written_version;
  spec.kind = fakegpu_kind;
  Device all{"all", {}};
  for (const auto& [n, node] : gpus) {
    Device device{std::to_string(n), {}};
    device.edits.device_nodes.push_back(node_edit(*node));
    all.edits.device_nodes.push_back(node_edit(*node));
    spec.devices.push_back(device);
  }
  spec.devices.push_back(all);

  spec.edits.device_nodes.push_back(node_edit(*ctl));
  // The same binds as --gpu (mount::plan_gpu_userspace): one source of container paths.
  for (const auto& step : mount::plan_gpu_userspace(userspace)) {
    spec.edits.mounts.push_back(
        {step.source, step.target, "bind", {"ro", "nosuid", "nodev", "bind"}});
  }
  std::vector<std::string> env{std::string("PATH=") + base_path};
  mount::add_gpu_environment(env);
  spec.edits.env = env;
  return spec;
}

std::vector<mount::HostDevice> host_fakegpu_nodes(const std::string& dev_dir) {
  std::vector<mount::HostDevice> nodes;
  auto names = mount::list_fakegpu_nodes(dev_dir);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string path = dev_dir + "/" + name;
    nodes.push_back(mount::inspect_device({path, path, "rwm"}));
  }
  split_nodes(nodes);  // the driver's nodes first: before looking for its libraries
  return nodes;
}

}  // namespace mrun::cdi
