#include "cdi/cdi_registry.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"

namespace mrun::cdi {

std::vector<std::string> default_spec_dirs() {
  return {"/etc/cdi", "/var/run/cdi"};
}

std::vector<Spec> load_specs(const std::vector<std::string>& dirs, const Logger& log) {
  std::vector<Spec> specs;
  for (const auto& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      log.debug("cdi: " + dir + ": " + errno_name(errno) + ", skipped");
      continue;
    }
    std::vector<std::string> names;
    while (struct dirent* entry = ::readdir(d)) names.emplace_back(entry->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      std::string path = dir + "/" + name;
      auto ends = [&name](const std::string& suffix) {
        return name.size() > suffix.size() &&
               name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (ends(".yaml") || ends(".yml")) {
        log.debug("cdi: " + path + ": YAML specs are not read by mrun, skipped");
        continue;
      }
      if (!ends(".json")) continue;
      auto text = sys::read_file(path);
      if (!text) throw_errno("read CDI spec " + path);
      specs.push_back(parse_spec(*text, path));
      log.debug("cdi: " + path + ": kind " + specs.back().kind);
    }
  }
  return specs;
}

void apply_edits(const ContainerEdits& edits, oci::RunRequest& config) {
  for (const auto& node : edits.device_nodes) {
    mount::DeviceSpec spec{node.host_path.value_or(node.path), node.path,
                           node.permissions.value_or("rwm")};
    if (spec.access.empty()) spec.access = "rwm";
    // The node must exist on the host with the numbers the spec was written for: a
    // spec left over from another boot must not hand the container another device.
    auto host = mount::inspect_device(spec);
    if ((node.major && *node.major != static_cast<std::int64_t>(host.major)) ||
        (node.minor && *node.minor != static_cast<std::int64_t>(host.minor))) {
      throw Error("CDI device node " + spec.host_path + " is " + std::to_string(host.major) + ":" +
                      std::to_string(host.minor) + " on this host, the spec says " +
                      std::to_string(node.major.value_or(-1)) + ":" +
                      std::to_string(node.minor.value_or(-1)),
                  ESTALE, "regenerate the spec (mrun cdi generate)");
    }
    std::erase_if(config.additions.devices, [&](const mount::DeviceSpec& d) {
      return d.container_path == spec.container_path;
    });
    config.additions.devices.push_back(spec);
  }
  for (const auto& m : edits.mounts) {
    if (!sys::exists(m.host_path)) {
      throw Error("CDI mount source " + m.host_path + " does not exist", ENOENT,
                  "regenerate the spec (mrun cdi generate), or install what it names");
    }
    bool ro = std::find(m.options.begin(), m.options.end(), "ro") != m.options.end();
    config.volumes.push_back({m.host_path, m.container_path, ro});
  }
  for (const auto& entry : edits.env) {
    std::string key = entry.substr(0, entry.find('='));
    std::erase_if(config.env, [&](const std::string& e) { return starts_with(e, key + "="); });
    config.env.push_back(entry);
  }
}

void apply_devices(const std::vector<QualifiedName>& names,
                   const std::vector<std::string>& spec_dirs, oci::RunRequest& config,
                   const Logger& log) {
  if (names.empty()) return;
  const auto& dirs = spec_dirs.empty() ? default_spec_dirs() : spec_dirs;
  apply_edits(resolve(load_specs(dirs, log), names), config);
}

}  // namespace mrun::cdi
