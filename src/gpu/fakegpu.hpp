// libfakegpu: the user-space driver ("UMD") of fakegpu.ko.
//
// A thin RAII layer over the ABI in <fakegpu.h> (kmod/uapi): a Device is one open
// context, Buffers free their handle, Mappings unmap, and a Ring submits jobs through
// shared memory with one doorbell ioctl per batch instead of one ioctl per job.
// Errors are thrown as fakegpu::Error, which names the step that failed and its errno
// so callers (fakegpu-client, mrun gpu matrix) can report "open /dev/fakegpu0: EACCES".
//
// Thread safety: a Device and what it hands out may be used by one thread at a time.
#pragma once

#include <fakegpu.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "visible_devices.hpp"

namespace fakegpu {

class Error : public std::runtime_error {
 public:
  // what(): "<step>: <ENAME> (<strerror>)", or just "<step>" when err is 0.
  Error(std::string step, int err);
  const std::string& step() const noexcept { return step_; }
  int code() const noexcept { return code_; }  // errno; 0 when not from a syscall

 private:
  std::string step_;
  int code_;
};

// "EACCES" for EACCES; "E<n>" for values glibc has no name for; "0" for 0.
std::string errno_name(int err);

// ioctls this library made in this process (all threads): what "syscalls per job"
// is measured with.
std::uint64_t ioctl_count() noexcept;

// ---- enumeration ----

// Indices N of the /dev/fakegpuN nodes in dev_dir (readdir only: no open).
std::vector<unsigned> present_devices(const std::string& dev_dir = "/dev");
// present_devices() filtered and ordered by FAKEGPU_VISIBLE_DEVICES.
Visibility visible_devices(const std::string& dev_dir = "/dev");
std::string device_path(unsigned index, const std::string& dev_dir = "/dev");

// ---- jobs (plain ABI structs; handles come from Buffer::handle()) ----

namespace job {
fakegpu_job nop();
fakegpu_job fill(std::uint32_t dst, std::uint64_t offset, std::uint64_t length,
                 std::uint32_t value);
fakegpu_job copy(std::uint32_t dst, std::uint64_t dst_offset, std::uint32_t src,
                 std::uint64_t src_offset, std::uint64_t length);
// Writes crc32(src[src_offset, +length)) as a u32 at dst[dst_offset].
fakegpu_job checksum(std::uint32_t dst, std::uint64_t dst_offset, std::uint32_t src,
                     std::uint64_t src_offset, std::uint64_t length);
}  // namespace job

struct Fence {
  std::uint64_t value = 0;
};

namespace detail {
class Context;
}

// An mmap'd range, unmapped on destruction.
class Mapping {
 public:
  Mapping() noexcept = default;
  Mapping(void* addr, std::size_t length) noexcept : addr_(addr), length_(length) {}
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  std::span<std::byte> bytes() const noexcept { return {static_cast<std::byte*>(addr_), length_}; }
  void* data() const noexcept { return addr_; }
  std::size_t size() const noexcept { return length_; }

 private:
  void* addr_ = nullptr;
  std::size_t length_ = 0;
};

// A buffer handle of one context. Destruction frees the handle; the memory stays
// alive (and charged) while jobs or mappings still use it.
class Buffer {
 public:
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  std::uint32_t handle() const noexcept { return handle_; }
  std::uint64_t size() const noexcept { return size_; }
  // MAP ioctl, then mmap(MAP_SHARED) of `length` bytes (0: the whole buffer).
  Mapping map(std::size_t length = 0) const;
  // FREE now, reporting errors (the destructor then does nothing).
  void free();

 private:
  friend class Device;
  Buffer(std::shared_ptr<detail::Context> ctx, std::uint32_t handle, std::uint64_t size)
      : ctx_(std::move(ctx)), handle_(handle), size_(size) {}
  std::shared_ptr<detail::Context> ctx_;
  std::uint32_t handle_ = 0;
  std::uint64_t size_ = 0;
};

// The submission ring of a context: jobs are written into shared memory and handed
// to the driver by one DOORBELL ioctl per flush.
class Ring {
 public:
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  std::uint32_t entries() const noexcept { return entries_; }
  // Writes the job and publishes it; no syscall. False when the ring is full.
  bool try_push(const fakegpu_job& j);
  // try_push, but when the ring is full: flush, then wait for the oldest batch.
  void push(const fakegpu_job& j);
  // Rings the doorbell if jobs were pushed since the last flush. Returns the fence
  // of the last job flushed so far (Fence{0} if none ever was).
  Fence flush();
  std::uint32_t unflushed() const noexcept { return tail_ - claimed_; }

 private:
  friend class Device;
  explicit Ring(std::shared_ptr<detail::Context> ctx);
  struct Batch {
    std::uint32_t start;
    std::uint32_t count;
    std::uint64_t first_fence;
  };
  std::shared_ptr<detail::Context> ctx_;
  Mapping map_;
  fakegpu_sq_ctrl* ctrl_ = nullptr;
  fakegpu_job* slots_ = nullptr;
  std::uint32_t entries_ = 0;
  std::uint32_t tail_ = 0;     // our copy of ctrl_->tail
  std::uint32_t claimed_ = 0;  // entries handed over by a doorbell
  std::uint64_t last_fence_ = 0;
  std::deque<Batch> batches_;  // flushed batches that may not be consumed yet
};

// How Device::open opens the node. A read-only descriptor may only look (INFO,
// MAP, WAIT, the fence page): the driver refuses ALLOC, FREE, SUBMIT, DOORBELL and
// RESET with EBADF and the submission ring with EACCES, and libfakegpu's errors then
// say so. It is what a container given the node with --device PATH:r can open.
enum class Access { read_write, read_only };

// One open of /dev/fakegpuN: a context with its own handles, fences and rings.
class Device {
 public:
  static Device open(const std::string& path);  // read-write
  static Device open(const std::string& path, Access access);
  static Device open_index(unsigned index, const std::string& dev_dir = "/dev");
  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;
  ~Device();

  const std::string& path() const noexcept;
  int fd() const noexcept;
  fakegpu_info info() const;
  Buffer alloc(std::uint64_t size);
  // SUBMIT ioctl: one syscall per job. When the context's queue is full (EBUSY)
  // it waits for its last fence and submits again.
  Fence submit(const fakegpu_job& j);
  // Completed? Reads the mapped fence page: no syscall.
  bool poll(Fence f);
  // Waits until f completes; true, or false on timeout (timeout_ns >= 0).
  // Polls the fence page first and only then sleeps in the WAIT ioctl.
  bool wait(Fence f, std::int64_t timeout_ns = -1);
  // The read-only fence page (mapped on first use).
  const fakegpu_fence_page& fence_page();
  // The submission ring (mapped on first use).
  Ring& ring();
  // FAKEGPU_IOCTL_RESET: needs CAP_SYS_ADMIN in the initial user namespace.
  unsigned reset();
  // Any ioctl, counted; 0 or the errno. For callers that test the ABI itself.
  int try_ioctl(unsigned long request, void* arg) noexcept;

 private:
  explicit Device(std::shared_ptr<detail::Context> ctx);
  std::shared_ptr<detail::Context> ctx_;
  std::unique_ptr<Ring> ring_;
};

}  // namespace fakegpu
