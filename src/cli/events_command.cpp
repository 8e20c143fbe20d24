// mrun events [--stats] [--interval DURATION] ID   -- see mrun-oci(1)
#include <cerrno>
#include <iostream>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cli/command.hpp"
#include "lifecycle/events.hpp"

namespace mrun::cli {

namespace {

// Go's duration syntax as runc's --interval takes it, for the common units: "5s",
// "500ms", "1m", "1m30s".
std::chrono::milliseconds parse_duration(const std::string& text) {
  std::chrono::milliseconds total{0};
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t digits = i;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    std::size_t unit_end = digits;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) {
      ++unit_end;
    }
    auto number = parse_u64(text.substr(i, digits - i));
    const std::string unit = text.substr(digits, unit_end - digits);
    const std::int64_t scale = unit == "ms"  ? 1
                               : unit == "s" ? 1000
                               : unit == "m" ? 60000
                               : unit == "h" ? 3600000
                                             : 0;
    if (!number || scale == 0 || *number > 1000000000) {
      throw Error("--interval \"" + text + "\" is not a duration", EINVAL,
                  "use a number with ms, s, m or h, as 5s or 500ms");
    }
    total += std::chrono::milliseconds(static_cast<std::int64_t>(*number) * scale);
    i = unit_end;
  }
  if (total.count() <= 0) {
    throw Error("--interval \"" + text + "\" must be positive", EINVAL, "e.g. --interval 5s");
  }
  return total;
}

class EventsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* events = app.add_subcommand(
        "events", "print a container's stats and OOM events as JSON, as runc events does");
    events->add_option("ID", id_, "container id")->required();
    events->add_flag("--stats", stats_, "print the stats once and exit");
    events->add_option("--interval", interval_, "how often to print the stats (default 5s)");
    return events;
  }

  int execute(const runtime::GlobalOptions& global) override {
    runtime::container_events(runtime::make_context(global), id_, stats_, parse_duration(interval_),
                              std::cout);
    return 0;
  }

 private:
  std::string id_;
  bool stats_ = false;
  std::string interval_ = "5s";
};

}  // namespace

std::unique_ptr<Command> make_events_command() {
  return std::make_unique<EventsCommand>();
}

}  // namespace mrun::cli
