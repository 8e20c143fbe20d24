// The state a Device shares with its Buffers and Ring: the fd of one open of
// /dev/fakegpuN and the mapped fence page. Private to libfakegpu.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fakegpu.hpp"

namespace fakegpu::detail {

class Context {
 public:
  Context(std::string path, int fd) noexcept : path_(std::move(path)), fd_(fd) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  const std::string& path() const noexcept { return path_; }
  int fd() const noexcept { return fd_; }

  // One ioctl, counted in ioctl_count(); 0 or the errno (EINTR retried).
  int ioctl(unsigned long request, void* arg) noexcept;
  // The same, throwing Error(step, errno) on failure.
  void ioctl_or_throw(unsigned long request, void* arg, const std::string& step);
  // step, plus why when `err` is how the driver refuses `what` on a descriptor
  // opened read-only (EBADF for a write ioctl, EACCES for the ring): " (opened
  // read-only: ALLOC needs a descriptor open for writing)".
  std::string explain(const std::string& step, int err, std::string_view what) const;
  // step, plus the fault when `err` is how the driver fails a poisoned context (EIO)
  // or a lost device (ENODEV): " (context lost to Xid 31 (MMU fault): a job named
  // ...; fix ...)". Asks INFO, which works on both.
  std::string explain_fault(const std::string& step, int err);
  // The Error for a failed ioctl: explain() for EBADF/EACCES, explain_fault() for
  // EIO/ENODEV.
  Error failure(const std::string& step, int err, std::string_view what = {});

  const fakegpu_fence_page& fence_page();
  bool poll(std::uint64_t fence);
  bool wait(std::uint64_t fence, std::int64_t timeout_ns);

  // Highest fence this context handed out to us (either path).
  std::uint64_t last_fence = 0;

 private:
  std::string path_;
  int fd_;
  Mapping fence_map_;
};

}  // namespace fakegpu::detail
