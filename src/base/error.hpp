// One error type for the whole runtime. It carries what failed (the object and the
// operation), the errno if a syscall failed, a hint that tells the user how to fix it,
// and the exit status mrun should return. Layers add context by catching and
// rethrowing with `Error::wrap`, so a message reads from the outside in:
//   "mount overlay on /run/.../rootfs: Operation not permitted (retry with --overlay=fuse)"
#pragma once

#include <stdexcept>
#include <string>

namespace mrun {

// Exit statuses of mrun itself, as documented in mrun(1). Anything else is the
// container command's own status (or 128+N when it died of signal N).
namespace exit_code {
inline constexpr int runtime_error = 125;
inline constexpr int cannot_execute = 126;
inline constexpr int not_found = 127;
}  // namespace exit_code

class Error : public std::runtime_error {
 public:
  explicit Error(std::string what, int err = 0, std::string hint = {},
                 int exit_status = exit_code::runtime_error);

  // The errno of the failed syscall, 0 when the error did not come from one.
  int errno_value() const noexcept { return errno_; }
  const std::string& hint() const noexcept { return hint_; }
  const std::string& what_failed() const noexcept { return what_; }
  int exit_status() const noexcept { return exit_status_; }

  // "<context>: <what>" with errno and hint kept.
  Error wrap(const std::string& context) const;
  // The same error with a hint (replaces any previous hint).
  Error with_hint(std::string hint) const;

 private:
  static std::string render(const std::string& what, int err, const std::string& hint);
  std::string what_;
  int errno_;
  std::string hint_;
  int exit_status_;
};

// Throws an Error for the current errno: "<what>: <strerror(errno)>".
[[noreturn]] void throw_errno(const std::string& what, std::string hint = {});
[[noreturn]] void throw_errno(int err, const std::string& what, std::string hint = {});

// Symbolic name of an errno value ("EPERM"), for tables and tests.
std::string errno_name(int err);

}  // namespace mrun
