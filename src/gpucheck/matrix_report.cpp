#include "gpucheck/matrix_report.hpp"

#include <sstream>

namespace mrun::gpucheck {

std::string describe(const std::string& step, const std::string& err) {
  return err.empty() ? step : step + " " + err;
}

std::string verdict(const RunResult& run) {
  if (run.skipped) return "skipped";
  bool same = run.outcome.step == run.expect_step && run.outcome.errno_name == run.expect_errno;
  return same ? "as expected" : "differs";
}

bool all_as_expected(const MatrixReport& report) {
  for (const auto& row : report.rows) {
    if (verdict(row.run) == "differs") return false;
    if (row.fix && verdict(*row.fix) == "differs") return false;
  }
  return true;
}

namespace {

// A table cell: no newline, no unescaped pipe.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string reached(const RunResult& run) {
  if (run.skipped) return "skipped: " + *run.skipped;
  std::string text = describe(run.outcome.step, run.outcome.errno_name) + " (exit " +
                     std::to_string(run.outcome.exit_status) + ")";
  if (verdict(run) == "differs")
    text += " **differs: expected " + describe(run.expect_step, run.expect_errno) + "**";
  return text;
}

nlohmann::json run_json(const RunResult& run) {
  nlohmann::json j{{"mode", to_string(run.mode)},
                   {"command", run.command},
                   {"expected", {{"step", run.expect_step}, {"errno", run.expect_errno}}},
                   {"result", verdict(run)}};
  if (!run.label.empty()) j["label"] = run.label;
  if (run.skipped) {
    j["skipped"] = *run.skipped;
    j["step"] = nullptr;
    j["errno"] = nullptr;
    j["exit_status"] = nullptr;
  } else {
    j["step"] = run.outcome.step;
    j["errno"] = run.outcome.errno_name;
    j["exit_status"] = run.outcome.exit_status;
    j["line"] = run.outcome.line;
    j["output"] = run.output;
  }
  return j;
}

}  // namespace

std::string render_markdown(const MatrixReport& report) {
  std::ostringstream out;
  out << "Kernel: `" << report.kernel << "`; rootless rows run as `" << report.rootless_user
      << "`.\n\n";
  out << "| # | mode | configuration | step reached, errno (exit) | what breaks | what fixes "
         "it | with the fix |\n";
  out << "|---|---|---|---|---|---|---|\n";
  for (const auto& row : report.rows) {
    std::string fix = "-";
    if (row.fix) {
      // The same missing precondition twice says nothing new.
      bool same_skip = row.fix->skipped && row.fix->skipped == row.run.skipped;
      fix = (row.fix->label.empty() ? "" : row.fix->label + ": ") +
            (same_skip ? std::string("skipped (as above)") : reached(*row.fix));
    }
    out << "| " << row.spec.id << " | " << to_string(row.run.mode) << " | "
        << cell(row.spec.configuration) << " | " << cell(reached(row.run)) << " | "
        << cell(row.spec.breaks) << " | " << cell(row.spec.fixes) << " | " << cell(fix) << " |\n";
  }
  out << "\nThe runs (`$WORK` is the matrix's temporary directory; rootless rows as `"
      << report.rootless_user << "`):\n\n";
  for (const auto& row : report.rows) {
    out << "- " << row.spec.id << ": `" << row.run.command << "`\n";
    if (row.fix) out << "  - " << row.fix->label << ": `" << row.fix->command << "`\n";
  }
  return out.str();
}

nlohmann::json to_json(const MatrixReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : report.rows) {
    nlohmann::json j = run_json(row.run);
    j["id"] = row.spec.id;
    j["configuration"] = row.spec.configuration;
    j["breaks"] = row.spec.breaks;
    j["fixes"] = row.spec.fixes;
    j["fix"] = row.fix ? run_json(*row.fix) : nlohmann::json(nullptr);
    rows.push_back(j);
  }
  return {{"kernel", report.kernel},
          {"rootless_user", report.rootless_user},
          {"all_as_expected", all_as_expected(report)},
          {"rows", rows}};
}

}  // namespace mrun::gpucheck
