// mrun userns [--stop] [--format table|json]   -- see mrun(1)
//
// The holder of the state root's shared user namespace (userns/shared_userns.hpp) is a
// process that outlives the mrun that started it, by design; this shows it, and ends
// it, as podman's `system migrate` ends its pause process.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "userns/shared_userns.hpp"

namespace mrun::cli {

namespace {

std::string map_text(const std::vector<userns::IdMapEntry>& map) {
  std::string text;
  for (const auto& e : map) {
    if (!text.empty()) text += ", ";
    text +=
        std::to_string(e.inside) + " " + std::to_string(e.outside) + " " + std::to_string(e.count);
  }
  return text;
}

nlohmann::json map_json(const std::vector<userns::IdMapEntry>& map) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : map) {
    out.push_back({{"containerID", e.inside}, {"hostID", e.outside}, {"size", e.count}});
  }
  return out;
}

class UsernsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "userns", "show the holder of the shared user namespace rootless containers join");
    cmd->add_flag("--stop", stop_,
                  "end the holder (running containers keep their namespace; the next one "
                  "starts a new holder)");
    cmd->add_option("--format", format_, "table|json")->check(CLI::IsMember({"table", "json"}));
    return cmd;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    if (stop_) {
      if (auto pid = userns::stop_shared_userns_holder(ctx.state_root)) {
        std::cout << "stopped mrun-userns " << *pid << "\n";
      }
      return 0;
    }
    auto holder = userns::find_shared_userns_holder(ctx.state_root);
    if (format_ == "json") {
      nlohmann::json out = nullptr;
      if (holder) {
        out = {{"pid", holder->pid},
               {"userNamespace", holder->user_namespace},
               {"uidMappings", map_json(holder->uids)},
               {"gidMappings", map_json(holder->gids)},
               {"stateRoot", ctx.state_root}};
      }
      std::cout << out.dump() << "\n";
      return 0;
    }
    if (!holder) return 0;
    std::cout << "PID\tUSER NAMESPACE\tUID MAP\tGID MAP\tSTATE ROOT\n"
              << holder->pid << "\t" << holder->user_namespace << "\t" << map_text(holder->uids)
              << "\t" << map_text(holder->gids) << "\t" << ctx.state_root << "\n";
    return 0;
  }

 private:
  bool stop_ = false;
  std::string format_ = "table";
};

}  // namespace

std::unique_ptr<Command> make_userns_command() {
  return std::make_unique<UsernsCommand>();
}

}  // namespace mrun::cli
