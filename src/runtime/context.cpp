#include "runtime/context.hpp"

#include <unistd.h>

#include <cstdlib>

#include "runtime/privilege.hpp"
#include "userns/caller.hpp"

namespace mrun::runtime {

Context make_context(const GlobalOptions& options) {
  Context ctx;
  ctx.log.set_debug(options.debug);
  ctx.log.set_log_file(options.log_fd,
                       options.log_format == "json" ? LogFormat::json : LogFormat::text);
  auto model = privilege_model_for(::getuid(), nullptr, userns::in_initial_user_namespace());
  ctx.state_root = options.state_root.empty() ? model.default_state_root : options.state_root;
  ctx.data_root = model.default_data_root;
  ctx.cgroups_disabled = options.cgroup_manager == "disabled";
  if (const char* f = std::getenv("MRUN_SUBUID_FILE")) ctx.subuid_file = f;
  if (const char* f = std::getenv("MRUN_SUBGID_FILE")) ctx.subgid_file = f;
  return ctx;
}

}  // namespace mrun::runtime
