#include "cli/oci_bundle.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "base/error.hpp"
#include "oci/spec.hpp"

namespace mrun::cli {

runtime::ContainerConfig config_from_bundle(const std::string& bundle, const std::string& id,
                                            const runtime::Context& ctx) {
  if (!runtime::valid_container_name(id)) {
    throw Error("invalid container id \"" + id + "\"", EINVAL,
                "use letters, digits, '_', '.' and '-', starting with a letter or digit");
  }
  char resolved[PATH_MAX];
  if (::realpath(bundle.c_str(), resolved) == nullptr) {
    throw_errno("bundle " + bundle, "give the directory holding config.json with --bundle");
  }
  oci::Spec spec = oci::load_bundle(resolved);
  auto config = oci::to_container_config(spec, resolved, id, ::getuid(), ::getgid(),
                                         ctx.data_root + "/oci", ctx.log);
  if (ctx.cgroups_disabled) config.cgroups = runtime::CgroupsMode::disabled;
  runtime::validate(config);
  oci::apply_rlimits(spec);
  return config;
}

runtime::ContainerState read_existing(const runtime::StateStore& store, const std::string& id) {
  auto state = store.read(id);
  if (!state) throw Error("container does not exist: " + id, ENOENT, "see `mrun list`");
  return *state;
}

}  // namespace mrun::cli
