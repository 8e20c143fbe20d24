// mrun create [--bundle DIR] [--pid-file FILE] ID   -- see mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/detach.hpp"
#include "cli/oci_bundle.hpp"
#include "runtime/state.hpp"

namespace mrun::cli {

namespace {

class CreateCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* create = app.add_subcommand("create",
                                      "create a container from an OCI bundle; "
                                      "it waits for `mrun start` before its process runs");
    create->add_option("ID", id_, "container id")->required();
    create->add_option("-b,--bundle", bundle_, "the OCI bundle (default: .)");
    create->add_option("--pid-file", pid_file_, "write the container's pid to FILE");
    return create;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    // runc's wording; the atomic claim in the launcher stays the real arbiter.
    if (store.read(id_)) throw Error("container with given ID already exists: " + id_, EEXIST);
    auto config = config_from_bundle(bundle_, id_, ctx);
    if (config.tty) {
      throw Error(
          "config.json: process.terminal: a terminal needs --console-socket, which mrun "
          "create does not support yet",
          ENOTSUP, "set \"terminal\": false, or use `mrun run --bundle`");
    }
    config.detach = true;
    return create_detached(config, ctx, pid_file_);
  }

 private:
  std::string id_;
  std::string bundle_ = ".";
  std::string pid_file_;
};

}  // namespace

std::unique_ptr<Command> make_create_command() {
  return std::make_unique<CreateCommand>();
}

}  // namespace mrun::cli
