// mrun list [--format table|json] [-q]   -- see mrun(1), mrun-oci(1)
//
// One listing for mrun's own containers and OCI ones: the table has runc's columns
// (ID PID STATUS BUNDLE CREATED OWNER) and mrun's COMMAND; the JSON objects carry runc's
// field names (ociVersion id pid status bundle rootfs created owner annotations) next
// to mrun's own (name exit_code command finished overlay rootless).
#include <unistd.h>
#include <algorithm>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/strings.hpp"
#include "cli/command.hpp"
#include "state/state.hpp"
#include "state/teardown.hpp"
#include "sys/fs.hpp"
#include "sys/user_db.hpp"

namespace mrun::cli {

namespace {

class ListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* list = app.add_subcommand("list", "list containers");
    list->add_option("--format", format_, "table|json")->check(CLI::IsMember({"table", "json"}));
    list->add_flag("-q,--quiet", quiet_, "print names only");
    return list;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::sweep_leftovers(ctx, runtime::Sweep::every_state);
    runtime::StateStore store(ctx.state_root);
    auto states = store.list();
    std::sort(states.begin(), states.end(),
              [](const auto& a, const auto& b) { return a.created < b.created; });
    const std::string owner = owner_name();
    if (format_ == "json") {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& s : states) {
        auto status = runtime::effective_status(s);
        auto oci = nlohmann::json::parse(runtime::oci_state_json(s, status));
        out.push_back({{"ociVersion", oci["ociVersion"]},
                       {"id", s.name},
                       {"name", s.name},
                       {"pid", oci["pid"]},
                       {"status", oci["status"]},
                       {"bundle", s.bundle},
                       {"owner", owner},
                       {"annotations", s.annotations},
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
    // Rows first, then each column as wide as its widest cell ("stopped(137)", a long
    // bundle path), as runc's tabwriter does.
    std::vector<std::vector<std::string>> rows{
        {"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER", "COMMAND"}};
    for (const auto& s : states) {
      auto status = runtime::effective_status(s);
      auto oci = nlohmann::json::parse(runtime::oci_state_json(s, status));
      std::string shown = oci["status"].get<std::string>();
      if (status == runtime::Status::stopped) {
        // reaped_by_caller: its exit status went to the engine that created it.
        if (s.exit_code >= 0) {
          shown += "(" + std::to_string(s.exit_code) + ")";
        } else if (!s.reaped_by_caller) {
          shown += "(killed)";
        }
      }
      rows.push_back({s.name, std::to_string(oci["pid"].get<int>()), shown,
                      s.bundle.empty() ? "-" : s.bundle, s.created, owner, join(s.command, " ")});
    }
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& row : rows) {
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (const auto& row : rows) {
      std::string line;
      for (std::size_t c = 0; c < row.size(); ++c) {
        line += row[c];
        if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 3, ' ');
      }
      std::cout << line << "\n";
    }
    return 0;
  }

 private:
  // The state root is the caller's own, so every container in it is the caller's.
  static std::string owner_name() { return sys::user_name_or_id(::getuid()); }

  std::string format_ = "table";
  bool quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_list_command() {
  return std::make_unique<ListCommand>();
}

}  // namespace mrun::cli
