// The checks fakegpu-client runs, in order, and what each failure exits with.
//
// The table is the contract with scripts and with `mrun gpu matrix`: a check's name
// and exit code never change meaning (fakegpu-client(1), fakegpu(4)). Each check is
// self-contained - it allocates what it needs - so `--check NAME` runs it alone
// (after "open", which every check needs).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fakegpu.hpp"

namespace fakegpu::client {

inline constexpr int kExitPassed = 0;
inline constexpr int kExitInternal = 1;  // an unexpected exception: a bug in the client
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDevice = 3;  // FAKEGPU_VISIBLE_DEVICES hides every device

struct CheckSpec {
  std::string_view name;
  int exit_code;
  bool by_default;  // false: only when asked for with --check
  std::string_view what;
};

inline constexpr std::array<CheckSpec, 13> kChecks{{
    {"open", 10, true, "open the device node read-write (read-only with --read-only)"},
    {"info", 11, true, "INFO ioctl; the driver speaks the ABI version the client was built for"},
    {"alloc", 12, true, "allocate a buffer; size rounded to pages and charged to the context"},
    {"map", 13, true, "mmap a buffer; CPU writes read back"},
    {"fill", 14, true, "FILL job through the SUBMIT ioctl, result seen through the mapping"},
    {"copy", 15, true, "COPY job between two buffers"},
    {"checksum", 16, true, "CHECKSUM job; the device's crc32 matches the client's"},
    {"wait", 17, true, "fences: WAIT, the mapped fence page, EINVAL for a fence never issued"},
    {"quota", 18, true, "EDQUOT at the handle and memory quotas; memory returned on free"},
    {"bad-handle", 19, true, "ENOENT for unknown, stale and double-freed handles"},
    {"isolation", 20, true, "a second context sees none of the first one's buffers"},
    {"ring", 21, true, "jobs through the mmap'd submission ring with one doorbell"},
    {"reset", 22, false, "privileged RESET ioctl (CAP_SYS_ADMIN in the initial user namespace)"},
}};

std::optional<CheckSpec> find_check(std::string_view name);

// The checks to run for a list of requested names (empty: the default set), in
// table order, always starting with "open". Unknown names are returned in
// `unknown`.
struct Selection {
  std::vector<CheckSpec> checks;
  std::vector<std::string> unknown;
};
Selection select_checks(const std::vector<std::string>& requested);

// The outcome of one check.
struct Outcome {
  std::string name;
  bool ok = false;
  std::string detail;  // on success: what was seen
  std::string step;    // on failure: what was being done
  int err = 0;         // on failure: errno, 0 if the failure was not a syscall's
};

// Runs the selected checks against the device at `path` until the first failure.
// With Access::read_only every context is opened O_RDONLY: "open" and "info" pass,
// and the first check that allocates fails with the driver's EBADF.
std::vector<Outcome> run_checks(const std::string& path, const std::vector<CheckSpec>& checks,
                                Access access = Access::read_write);

// The exit status for a run: 0 if all passed, else the failed check's code.
int exit_status(const std::vector<Outcome>& outcomes);

// Output: one line per check and a last line, or one JSON object.
std::string render_text(const std::vector<Outcome>& outcomes);
std::string render_json(const std::string& device, const std::vector<Outcome>& outcomes);
std::string json_escape(std::string_view s);

}  // namespace fakegpu::client
