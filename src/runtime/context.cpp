#include "runtime/context.hpp"

#include <unistd.h>

#include <cstdlib>

#include "runtime/privilege.hpp"
#include "sys/fs.hpp"
#include "userns/caller.hpp"

namespace mrun::runtime {

namespace {
// Every verb, not only run: a state root someone else made or can write is refused
// before anything in it is read (a forged state.json names the directories `delete`
// removes, the hooks it runs and the pids `kill` signals). The fallbacks in the shared
// /tmp are created here, at once, so that no other user can make them later.
void guard_state_and_data_roots(const PrivilegeModel& model, const GlobalOptions& options,
                                const Context& ctx) {
  const std::string uid = std::to_string(::getuid());
  const std::string tmp_hint =
      "set XDG_RUNTIME_DIR to a private directory of yours (a login's /run/user/" + uid +
      "), or pass --root DIR; only root can remove it from the shared /tmp";
  if (!options.state_root.empty()) {
    sys::check_private_dir(ctx.state_root, "state directory (--root)",
                           "give a directory of yours that only you can write");
  } else if (!model.shared_tmp_state_dir.empty()) {
    sys::ensure_private_dir(model.shared_tmp_state_dir, "state directory", tmp_hint);
  } else {
    sys::check_private_dir(ctx.state_root, "state directory", "remove it, or pass --root DIR");
  }
  if (!model.shared_tmp_data_dir.empty()) {
    sys::ensure_private_dir(model.shared_tmp_data_dir, "data directory (HOME is unset)",
                            "set HOME or XDG_DATA_HOME to a directory of yours; only root can "
                            "remove it from the shared /tmp");
  }
}
}  // namespace

Context make_context(const GlobalOptions& options) {
  Context ctx;
  ctx.log.set_debug(options.debug);
  ctx.log.set_log_file(options.log_fd,
                       options.log_format == "json" ? LogFormat::json : LogFormat::text);
  auto model = privilege_model_for(::getuid(), nullptr, userns::in_initial_user_namespace());
  ctx.state_root = options.state_root.empty() ? model.default_state_root : options.state_root;
  ctx.data_root = model.default_data_root;
  guard_state_and_data_roots(model, options, ctx);
  ctx.cgroups_disabled = options.cgroup_manager == "disabled";
  if (const char* f = std::getenv("MRUN_SUBUID_FILE")) ctx.subuid_file = f;
  if (const char* f = std::getenv("MRUN_SUBGID_FILE")) ctx.subgid_file = f;
  return ctx;
}

}  // namespace mrun::runtime
