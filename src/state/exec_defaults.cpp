#include "state/exec_defaults.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "mount/devices.hpp"
#include "runtime/process_spec_json.hpp"
#include "sys/fs.hpp"

namespace mrun::runtime {

using nlohmann::json;

ExecDefaults exec_defaults_of(const ContainerConfig& config, const PrivilegeModel& privilege) {
  ExecDefaults d;
  d.process = config.process;
  d.process.args.clear();
  d.process.terminal = false;
  if (config.run.gpu) mount::add_gpu_environment(d.process.env);
  d.host_capabilities = privilege.host_capabilities;
  return d;
}

std::string exec_defaults_to_json(const ExecDefaults& d) {
  json j = process_to_json(d.process);
  j["host_capabilities"] = d.host_capabilities;
  return j.dump();
}

ExecDefaults exec_defaults_from_json(const std::string& text) {
  json j = json::parse(text);
  return {process_from_json(j), j.value("host_capabilities", false)};
}

ExecDefaults read_exec_defaults(const StateStore& store, const std::string& id) {
  auto text = sys::read_file(store.dir_of(id) + "/exec.json");
  if (!text) {
    throw Error("container " + id + " has no exec.json (made by an older mrun?)", ENOENT,
                "recreate the container");
  }
  return exec_defaults_from_json(*text);
}

}  // namespace mrun::runtime
