// mrun list [--format table|json] [-q]   -- see mrun(1)
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/strings.hpp"
#include "cli/command.hpp"
#include "runtime/launcher.hpp"
#include "runtime/state.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class ListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* list = app.add_subcommand("list", "list containers");
    list->alias("ps");
    list->add_option("--format", format_, "table|json")->check(CLI::IsMember({"table", "json"}));
    list->add_flag("-q,--quiet", quiet_, "print names only");
    return list;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::sweep_leftovers(ctx);
    runtime::StateStore store(ctx.state_root);
    auto states = store.list();
    std::sort(states.begin(), states.end(),
              [](const auto& a, const auto& b) { return a.created < b.created; });
    if (format_ == "json") {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : states) {
        auto status = runtime::effective_status(s);
        out.push_back({{"name", s.name},
                       {"pid", status == runtime::Status::running ? s.pid : 0},
                       {"status", runtime::to_string(status)},
                       {"exit_code", s.exit_code},
                       {"rootfs", s.rootfs},
                       {"command", s.command},
                       {"created", s.created},
                       {"finished", s.finished},
                       {"overlay", s.overlay},
                       {"rootless", s.rootless},
                       {"cgroup", s.cgroup},
                       {"device_filter", s.device_filter}});
      }
      std::cout << out.dump(2) << std::endl;
      return 0;
    }
    if (quiet_) {
      for (const auto& s : states) std::cout << s.name << "\n";
      return 0;
    }
    std::printf("%-20s %-8s %-10s %-22s %s\n", "NAME", "PID", "STATUS", "CREATED", "COMMAND");
    for (const auto& s : states) {
      auto status = runtime::effective_status(s);
      std::string shown = runtime::to_string(status);
      if (status == runtime::Status::stopped) {
        shown += s.exit_code >= 0 ? "(" + std::to_string(s.exit_code) + ")" : "(killed)";
      }
      std::printf("%-20s %-8d %-10s %-22s %s\n", s.name.c_str(),
                  status == runtime::Status::running ? s.pid : 0, shown.c_str(), s.created.c_str(),
                  join(s.command, " ").c_str());
    }
    return 0;
  }

 private:
  std::string format_ = "table";
  bool quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_list_command() {
  return std::make_unique<ListCommand>();
}

}  // namespace mrun::cli
