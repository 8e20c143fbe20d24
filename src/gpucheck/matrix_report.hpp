// The results of `mrun gpu matrix` and their two renderings: a Markdown table (the
// default, and what docs/GPU-IN-CONTAINER.md holds) and JSON. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpucheck/matrix_rows.hpp"
#include "gpucheck/outcome.hpp"

namespace mrun::gpucheck {

struct RunResult {
  Mode mode = Mode::rootful;
  std::string label;
  std::string command;  // display_command() of what ran
  std::string expect_step;
  std::string expect_errno;
  std::optional<std::string> skipped;  // why it did not run, with the fix
  Outcome outcome;                     // when it ran
  std::string output;                  // its output (kept for --json)
};

// "as expected", "differs" or "skipped".
std::string verdict(const RunResult& run);
// "open EACCES", "passed", "BPF_PROG_LOAD EPERM"
std::string describe(const std::string& step, const std::string& err);

struct RowResult {
  RowSpec spec;
  RunResult run;
  std::optional<RunResult> fix;
};

struct MatrixReport {
  std::string kernel;  // uname -rv
  std::string rootless_user;
  std::vector<RowResult> rows;
};

// Every run that ran reached what was expected (skipped runs do not count).
bool all_as_expected(const MatrixReport& report);

std::string render_markdown(const MatrixReport& report);
nlohmann::json to_json(const MatrixReport& report);

}  // namespace mrun::gpucheck
