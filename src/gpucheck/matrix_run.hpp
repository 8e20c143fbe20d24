// Running `mrun gpu matrix`: prepares a work directory (busybox rootfs, an image copy
// with a node in it, copies of mrun and the fakegpu user-space driver readable by the
// rootless user), sets the host nodes' owner and mode each row needs, runs every row
// as root or as the rootless user, and puts the nodes back however it ends.
#pragma once

#include <functional>
#include <string>

#include "gpucheck/matrix_report.hpp"

namespace mrun::gpucheck {

struct MatrixOptions {
  std::string rootless_user;
  // Called before each run with a one-line description (for progress on stderr).
  std::function<void(const std::string&)> progress;
};

// Root only (the caller checks). Throws mrun::Error for what stops the whole matrix
// (no such user, no subordinate ids, no busybox); a row whose precondition is missing
// is reported as skipped.
MatrixReport run_matrix(const MatrixOptions& options);

}  // namespace mrun::gpucheck
