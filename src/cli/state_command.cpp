// mrun state ID   -- see mrun-oci(1)
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "oci/spec.hpp"
#include "runtime/state.hpp"

namespace mrun::cli {

namespace {

class StateCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* state =
        app.add_subcommand("state", "print a container's state as the OCI spec defines it");
    state->add_option("ID", id_, "container id")->required();
    return state;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = read_existing(store, id_);
    auto status = runtime::effective_status(state);
    // The runtime spec's state: pid only while the process exists (runc prints 0).
    nlohmann::json j = {
        {"ociVersion", oci::spec_version},
        {"id", state.name},
        {"status", runtime::to_string(status)},
        {"pid", status == runtime::Status::stopped ? 0 : state.pid},
        {"bundle", state.bundle},
    };
    if (!state.annotations.empty()) j["annotations"] = state.annotations;
    std::cout << j.dump(2) << std::endl;
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_state_command() {
  return std::make_unique<StateCommand>();
}

}  // namespace mrun::cli
