#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "context.hpp"
#include "fakegpu.hpp"
#include "shared_memory.hpp"
#include "version.hpp"
#include "xid.hpp"

namespace fakegpu {

static_assert(sizeof(fakegpu_job) == 64);
static_assert(sizeof(fakegpu_info) == 112);
static_assert(sizeof(fakegpu_submit) == 80);

namespace {

std::atomic<std::uint64_t> g_ioctls{0};

// Polls of the fence page before sleeping in WAIT: a job that is about to
// complete costs no syscall at all.
constexpr int kSpinPolls = 200;

std::string render(const std::string& step, int err) {
  if (err == 0) return step;
  return step + ": " + errno_name(err) + " (" + std::strerror(err) + ")";
}

// The commands the driver refuses on a read-only descriptor (fakegpu(4), ACCESS
// MODE); empty for the others.
std::string_view write_command(unsigned long request) {
  switch (request) {
    case FAKEGPU_IOCTL_ALLOC: return "ALLOC";
    case FAKEGPU_IOCTL_FREE: return "FREE";
    case FAKEGPU_IOCTL_SUBMIT: return "SUBMIT";
    case FAKEGPU_IOCTL_DOORBELL: return "DOORBELL";
    case FAKEGPU_IOCTL_RESET: return "RESET";
    default: return {};
  }
}

}  // namespace

Error::Error(std::string step, int err)
    : std::runtime_error(render(step, err)), step_(std::move(step)), code_(err) {}

std::string errno_name(int err) {
  if (err == 0) return "0";
  if (const char* name = strerrorname_np(err)) return name;
  return "E" + std::to_string(err);
}

std::uint64_t ioctl_count() noexcept {
  return g_ioctls.load(std::memory_order_relaxed);
}

// ---- enumeration ----

std::vector<unsigned> present_devices(const std::string& dev_dir) {
  std::vector<unsigned> found;
  DIR* dir = ::opendir(dev_dir.c_str());
  if (!dir) return found;
  constexpr std::string_view prefix = "fakegpu";
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    unsigned index = 0;
    const auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (name.empty() || ec != std::errc{} || ptr != name.data() + name.size())
      continue;  // fakegpuctl
    if (index >= FAKEGPU_MAX_DEVICES) continue;
    found.push_back(index);
  }
  ::closedir(dir);
  std::sort(found.begin(), found.end());
  return found;
}

Visibility visible_devices(const std::string& dev_dir) {
  const char* env = std::getenv("FAKEGPU_VISIBLE_DEVICES");
  return parse_visible_devices(env ? std::optional<std::string_view>(env) : std::nullopt,
                               present_devices(dev_dir));
}

std::string device_path(unsigned index, const std::string& dev_dir) {
  return dev_dir + "/fakegpu" + std::to_string(index);
}

// ---- jobs ----

namespace job {
fakegpu_job nop() {
  return fakegpu_job{};
}

fakegpu_job fill(std::uint32_t dst, std::uint64_t offset, std::uint64_t length,
                 std::uint32_t value) {
  fakegpu_job j{};
  j.op = FAKEGPU_OP_FILL;
  j.dst_handle = dst;
  j.dst_offset = offset;
  j.length = length;
  j.value = value;
  return j;
}

fakegpu_job copy(std::uint32_t dst, std::uint64_t dst_offset, std::uint32_t src,
                 std::uint64_t src_offset, std::uint64_t length) {
  fakegpu_job j{};
  j.op = FAKEGPU_OP_COPY;
  j.dst_handle = dst;
  j.dst_offset = dst_offset;
  j.src_handle = src;
  j.src_offset = src_offset;
  j.length = length;
  return j;
}

fakegpu_job checksum(std::uint32_t dst, std::uint64_t dst_offset, std::uint32_t src,
                     std::uint64_t src_offset, std::uint64_t length) {
  fakegpu_job j = copy(dst, dst_offset, src, src_offset, length);
  j.op = FAKEGPU_OP_CHECKSUM;
  return j;
}
}  // namespace job

// ---- Mapping ----

Mapping::Mapping(Mapping&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), length_(std::exchange(other.length_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (addr_) ::munmap(addr_, length_);
    addr_ = std::exchange(other.addr_, nullptr);
    length_ = std::exchange(other.length_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (addr_) ::munmap(addr_, length_);
}

// ---- Context ----

namespace detail {

Context::~Context() {
  fence_map_ = Mapping();  // unmap before the fd goes (either order works; this reads better)
  ::close(fd_);
}

int Context::ioctl(unsigned long request, void* arg) noexcept {
  for (;;) {
    g_ioctls.fetch_add(1, std::memory_order_relaxed);
    if (::ioctl(fd_, request, arg) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

void Context::ioctl_or_throw(unsigned long request, void* arg, const std::string& step) {
  if (const int err = ioctl(request, arg)) throw failure(step, err, write_command(request));
}

Error Context::failure(const std::string& step, int err, std::string_view what) {
  if (err == EIO || err == ENODEV) return Error(explain_fault(step, err), err);
  return Error(err == EBADF || err == EACCES ? explain(step, err, what) : step, err);
}

std::string Context::explain_fault(const std::string& step, int err) {
  fakegpu_info info{};
  if ((err != EIO && err != ENODEV) || ioctl(FAKEGPU_IOCTL_INFO, &info) != 0) return step;
  const bool lost = err == ENODEV && info.device_xid;
  const unsigned code = lost ? info.device_xid : err == EIO ? info.ctx_xid : 0;
  if (code == 0) return step;
  std::string why = step + (lost ? " (device lost to " : " (context lost to ") + xid_label(code);
  if (const XidInfo* x = find_xid(code))
    why += ": " + std::string(x->meaning) + "; " + std::string(x->fix);
  return why + ")";
}

std::string Context::explain(const std::string& step, int err, std::string_view what) const {
  if (what.empty() || (err != EBADF && err != EACCES)) return step;
  // Asked of the descriptor rather than remembered from open(): the fd's own mode
  // is what the driver checked, and this is only the error path.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDONLY) return step;
  return step + " (opened read-only: " + std::string(what) +
         " needs a descriptor open for writing)";
}

const fakegpu_fence_page& Context::fence_page() {
  if (!fence_map_.data()) {
    const auto len = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, FAKEGPU_MMAP_FENCE_OFFSET);
    if (p == MAP_FAILED) throw Error("mmap fence page of " + path_, errno);
    fence_map_ = Mapping(p, len);
  }
  return *static_cast<const fakegpu_fence_page*>(fence_map_.data());
}

bool Context::poll(std::uint64_t fence) {
  return load_acquire(&fence_page().completed) >= fence;
}

bool Context::wait(std::uint64_t fence, std::int64_t timeout_ns) {
  if (poll(fence)) return true;
  if (timeout_ns < 0) {
    for (int i = 0; i < kSpinPolls; ++i) {
      cpu_relax();
      if (poll(fence)) return true;
    }
  }
  fakegpu_wait w{};
  w.fence = fence;
  w.timeout_ns = timeout_ns;
  const int err = ioctl(FAKEGPU_IOCTL_WAIT, &w);
  if (err == 0) return true;
  if (err == ETIMEDOUT || err == EBUSY) return false;
  throw failure("wait for fence " + std::to_string(fence) + " on " + path_, err);
}

}  // namespace detail

// ---- Buffer ----

Buffer::Buffer(Buffer&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      handle_(std::exchange(other.handle_, 0)),
      size_(std::exchange(other.size_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (ctx_ && handle_) {
      fakegpu_free f{};
      f.handle = handle_;
      ctx_->ioctl(FAKEGPU_IOCTL_FREE, &f);
    }
    ctx_ = std::move(other.ctx_);
    handle_ = std::exchange(other.handle_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Buffer::~Buffer() {
  if (ctx_ && handle_) {
    fakegpu_free f{};
    f.handle = handle_;
    ctx_->ioctl(FAKEGPU_IOCTL_FREE, &f);  // cannot fail for a handle we own
  }
}

void Buffer::free() {
  fakegpu_free f{};
  f.handle = handle_;
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_FREE, &f, "free buffer " + std::to_string(handle_));
  handle_ = 0;
}

Mapping Buffer::map(std::size_t length) const {
  fakegpu_map m{};
  m.handle = handle_;
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_MAP, &m, "map buffer " + std::to_string(handle_));
  const std::size_t len = length ? length : m.size;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx_->fd(),
                   static_cast<off_t>(m.offset));
  if (p == MAP_FAILED) throw Error("mmap buffer " + std::to_string(handle_), errno);
  return Mapping(p, len);
}

// ---- Device ----

Device::Device(std::shared_ptr<detail::Context> ctx) : ctx_(std::move(ctx)) {}
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;
Device::~Device() = default;

Device Device::open(const std::string& path) {
  return open(path, Access::read_write);
}

Device Device::open(const std::string& path, Access access) {
  const int mode = access == Access::read_only ? O_RDONLY : O_RDWR;
  const int fd = ::open(path.c_str(), mode | O_CLOEXEC);
  if (fd < 0)
    throw Error(std::string("open ") + (access == Access::read_only ? "read-only " : "") + path,
                errno);
  Device dev(std::make_shared<detail::Context>(path, fd));
  // Like CUDA's first call: a driver that cannot serve this library is refused here,
  // in words that say which side to change (version.hpp).
  const fakegpu_info info = dev.info();
  if (const auto mismatch = driver_mismatch(info.abi_version, info.driver_version))
    throw Error(*mismatch, EPROTO);
  return dev;
}

Device Device::open_index(unsigned index, const std::string& dev_dir) {
  return open(device_path(index, dev_dir));
}

const std::string& Device::path() const noexcept {
  return ctx_->path();
}
int Device::fd() const noexcept {
  return ctx_->fd();
}

fakegpu_info Device::info() const {
  fakegpu_info i{};
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_INFO, &i, "info " + path());
  return i;
}

Buffer Device::alloc(std::uint64_t size) {
  fakegpu_alloc a{};
  a.size = size;
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_ALLOC, &a, "alloc " + std::to_string(size) + " bytes");
  return Buffer(ctx_, a.handle, a.alloc_size);
}

Fence Device::submit(const fakegpu_job& j) {
  fakegpu_submit s{};
  s.job = j;
  for (;;) {
    const int err = ctx_->ioctl(FAKEGPU_IOCTL_SUBMIT, &s);
    if (err == 0) break;
    if (err != EBUSY || ctx_->last_fence == 0)
      throw ctx_->failure("submit job op " + std::to_string(j.op), err, "SUBMIT");
    ctx_->wait(ctx_->last_fence, -1);  // the queue is full: let it drain
  }
  ctx_->last_fence = std::max(ctx_->last_fence, static_cast<std::uint64_t>(s.fence));
  return Fence{s.fence};
}

bool Device::poll(Fence f) {
  return ctx_->poll(f.value);
}
bool Device::wait(Fence f, std::int64_t timeout_ns) {
  return ctx_->wait(f.value, timeout_ns);
}
const fakegpu_fence_page& Device::fence_page() {
  return ctx_->fence_page();
}

Ring& Device::ring() {
  if (!ring_) ring_.reset(new Ring(ctx_));
  return *ring_;
}

unsigned Device::reset() {
  fakegpu_reset r{};
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_RESET, &r, "reset " + path());
  return r.reset_count;
}

int Device::try_ioctl(unsigned long request, void* arg) noexcept {
  return ctx_->ioctl(request, arg);
}

}  // namespace fakegpu
