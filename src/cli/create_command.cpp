// mrun create [--bundle DIR] [--pid-file FILE] [--console-socket PATH] [--preserve-fds N]
//             [--no-pivot] [--no-new-keyring] ID   -- see mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "launch/detach.hpp"
#include "state/state.hpp"

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
    add_process_options(create, process_);
    return create;
  }

  int preserved_fds() const override { return process_.preserve_fds; }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    // runc's wording; the atomic claim in the launcher stays the real arbiter.
    if (store.read(id_)) throw Error("container with given ID already exists: " + id_, EEXIST);
    auto config = config_from_bundle(bundle_, id_, ctx);
    apply_process_options(process_, config, true);
    config.run.detach = true;
    return runtime::create_detached(config, ctx, pid_file_);
  }

 private:
  std::string id_;
  std::string bundle_ = ".";
  std::string pid_file_;
  ProcessOptions process_;
};

}  // namespace

std::unique_ptr<Command> make_create_command() {
  return std::make_unique<CreateCommand>();
}

}  // namespace mrun::cli
