// The rows of `mrun gpu matrix` as data: for each, the configuration, the mrun command
// line it runs, what it is expected to reach, what breaks and what fixes it, and the
// optional second run that shows the fix (or the rootful side). Pure: the runner
// (matrix_run.cpp) sets the nodes up, checks the preconditions and runs the argv.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mrun::gpucheck {

enum class Mode { rootful, rootless };
std::string to_string(Mode mode);

// What a run needs of the host; a missing one makes it `skipped: <why and the fix>`.
enum class Need {
  module,            // fakegpu.ko loaded, /dev/fakegpu0 and /dev/fakegpuctl present
  two_devices,       // /dev/fakegpu1 too (insmod fakegpu.ko ndev=2)
  group_fakegpu,     // the group exists (the node setup chgrps to it)
  user_in_group,     // the rootless user is a member of group fakegpu
  helper,            // mrun-gpu-helper installed setuid root, policy allowing the user
  delegated_cgroup,  // the rootless user's mrun runs in a cgroup delegated to it
  skew_library,      // the libfakegpu built for a newer driver (src/gpu/fakegpu-skew)
};

// Owner and mode the host nodes get for a row (restored at the end).
enum class NodeSetup { unchanged, group_0660, root_0600 };

struct Run {
  Mode mode = Mode::rootful;
  std::vector<std::string> args;  // mrun's arguments ("run", "--rm", ...)
  bool use_helper = false;        // MRUN_GPU_HELPER set to the installed helper (else none)
  std::vector<Need> needs;
  std::string expect_step;   // Outcome::step
  std::string expect_errno;  // empty: none
  std::string label;         // what this run shows ("with --keep-groups")
};

struct RowSpec {
  int id = 0;
  std::string configuration;
  std::string breaks;
  std::string fixes;
  NodeSetup nodes = NodeSetup::unchanged;
  Run run;                 // the configuration itself
  std::optional<Run> fix;  // the fix applied (or the other mode), when it can be run
};

// Where the matrix's files are on the host.
struct MatrixPaths {
  std::string rootfs;          // busybox rootfs
  std::string image_rootfs;    // a copy with a node made by mknod at /gpu/fakegpu0 (row 7)
  std::string client_static;   // fakegpu-client-static
  std::string client_dynamic;  // fakegpu-client, alone in its directory (no libfakegpu)
  unsigned major = 0;          // fakegpu's character major (row 6's mknod)
  std::string skew_library;    // libfakegpu.so.1 built for driver 1.2 (row 13)
};

// The value MRUN_GPU_HELPER gets for a run that must not use the helper.
inline constexpr const char* no_helper = "/nonexistent/mrun-gpu-helper";

std::vector<RowSpec> matrix_rows(const MatrixPaths& paths);

// Why a run cannot be done, with the fix ("module not loaded: insmod ..."), or nothing.
struct HostFacts {
  bool module = false;
  bool two_devices = false;
  bool group_fakegpu = false;
  bool user_in_group = false;
  bool helper = false;
  std::string helper_problem;  // why not, with its fix
  bool delegated_cgroup = false;
  bool skew_library = false;
  std::string user;
};
std::optional<std::string> missing_precondition(const std::vector<Need>& needs,
                                                const HostFacts& facts);

// argv as a shell line, with `work` (the temp dir) shown as $WORK.
std::string display_command(const std::vector<std::string>& argv, const std::string& work);

}  // namespace mrun::gpucheck
