// What one run of the GPU matrix reached: the step that failed and its errno, read from
// the output of fakegpu-client, of the dynamic loader, of a busybox applet or of mrun
// itself. Pure (unit-tested on captured output).
#pragma once

#include <string>
#include <string_view>

namespace mrun::gpucheck {

// The step name of a run in which every check passed.
inline constexpr const char* step_passed = "passed";

struct Outcome {
  std::string step;        // "open", "reset", "BPF_PROG_LOAD", "mknod", "load libraries", "passed"
  std::string errno_name;  // "EACCES"; empty when the failure was not a syscall's
  int exit_status = 0;
  std::string line;  // the line the step was read from (empty for an unrecognised run)
  bool operator==(const Outcome&) const = default;
};

// Reads the outcome from a run's merged stdout+stderr and its exit status. In order:
//  - fakegpu-client: "FAIL CHECK: STEP: ERRNO (message)" -> CHECK, ERRNO;
//    "ALL CHECKS PASSED" -> "passed";
//  - ld.so: "error while loading shared libraries: ..." -> "load libraries";
//  - mrun: "mrun: ..." (not a warning) -> "BPF_PROG_LOAD"/"BPF_PROG_ATTACH" when named,
//    else "mrun", with the errno named in it or recognised from its strerror text;
//  - another program's last "PROG: ...: message" line -> PROG;
//  - otherwise "exit N".
Outcome parse_outcome(std::string_view output, int exit_status);

// The errno named in `text`: a word like EPERM, else a strerror(3) message found in it
// ("Permission denied" -> "EACCES"); empty when there is neither.
std::string errno_in(std::string_view text);

}  // namespace mrun::gpucheck
