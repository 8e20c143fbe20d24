// The checks of fakegpu-client against a real device. Each throws fakegpu::Error
// naming the step that failed; run_checks() turns that into an Outcome.
#include <fakegpu.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "client_checks.hpp"
#include "crc32.hpp"
#include "fakegpu.hpp"

namespace fakegpu::client {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;

struct Session {
  std::string path;
  Access access = Access::read_write;
  std::optional<Device> dev;
  Device& device() { return *dev; }
};

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Throws unless `err` is `want`: for calls that must fail with one exact errno.
void expect_errno(int err, int want, const std::string& step) {
  if (err == want) return;
  if (err == 0) throw Error(step + ": succeeded, want " + errno_name(want), 0);
  throw Error(step + " (want " + errno_name(want) + ")", err);
}

void expect(bool cond, const std::string& step) {
  if (!cond) throw Error(step, 0);
}

std::uint32_t word_at(const Mapping& m, std::uint64_t offset) {
  std::uint32_t v;
  std::memcpy(&v, m.bytes().data() + offset, sizeof v);
  return v;
}

// Every u32 of [offset, offset+length) in m equals value.
void expect_words(const Mapping& m, std::uint64_t offset, std::uint64_t length, std::uint32_t value,
                  const std::string& what) {
  for (std::uint64_t o = offset; o < offset + length; o += 4)
    if (const auto got = word_at(m, o); got != value)
      throw Error(what + ": word at offset " + std::to_string(o) + " is " + hex(got) + ", want " +
                      hex(value),
                  0);
}

void wait_done(Device& dev, Fence f) {
  expect(dev.wait(f, 10'000'000'000),
         "wait for fence " + std::to_string(f.value) + ": not done after 10 s");
}

std::string check_open(Session& s) {
  s.dev.emplace(Device::open(s.path, s.access));
  return "opened " + s.path + (s.access == Access::read_only ? " read-only" : " read-write");
}

std::string check_info(Session& s) {
  const auto i = s.device().info();
  if (i.abi_version != FAKEGPU_ABI_VERSION)
    throw Error("driver ABI " + std::to_string(i.abi_version) + ", client built for " +
                    std::to_string(FAKEGPU_ABI_VERSION),
                0);
  return "abi " + std::to_string(i.abi_version) + ", device " + std::to_string(i.device_index) +
         " of " + std::to_string(i.device_count) + ", quota " + std::to_string(i.mem_quota / kMiB) +
         " MiB/" + std::to_string(i.handle_quota) + " handles, ring " +
         std::to_string(i.ring_entries) + " entries, vram " + std::to_string(i.vram_used) + " of " +
         std::to_string(i.vram_size) + " bytes in use";
}

std::string check_alloc(Session& s) {
  Device& dev = s.device();
  const auto before = dev.info().ctx_mem_used;
  Buffer b = dev.alloc(kMiB + 1);
  expect(b.handle() >= 1, "handle " + std::to_string(b.handle()) + " is not >= 1");
  expect(b.size() == kMiB + 4096, "size " + std::to_string(b.size()) + ", want 1 MiB + one page");
  const auto during = dev.info().ctx_mem_used;
  expect(during == before + b.size(),
         "context charged " + std::to_string(during - before) + " bytes");
  b.free();
  expect(dev.info().ctx_mem_used == before, "memory not uncharged after free");
  return "1 MiB + 1 byte -> handle, " + std::to_string(kMiB + 4096) + " bytes charged and returned";
}

std::string check_map(Session& s) {
  Buffer b = s.device().alloc(64 * 1024);
  Mapping m = b.map();
  expect(m.size() == b.size(), "mapped " + std::to_string(m.size()) + " bytes");
  expect_words(m, 0, m.size(), 0, "new buffer not zeroed");
  for (std::uint64_t o = 0; o < m.size(); o += 4) {
    const auto v = static_cast<std::uint32_t>(o * 2654435761u);
    std::memcpy(m.bytes().data() + o, &v, 4);
  }
  Mapping again = b.map();
  for (std::uint64_t o = 0; o < m.size(); o += 4)
    expect(word_at(again, o) == static_cast<std::uint32_t>(o * 2654435761u),
           "second mapping does not see the first one's writes at " + std::to_string(o));
  return "64 KiB mapped twice, zeroed, writes shared";
}

std::string check_fill(Session& s) {
  Device& dev = s.device();
  Buffer b = dev.alloc(256 * 1024);
  Mapping m = b.map();
  const Fence f = dev.submit(job::fill(b.handle(), 4096, 128 * 1024, 0xdeadbeef));
  wait_done(dev, f);
  expect_words(m, 4096, 128 * 1024, 0xdeadbeef, "filled range");
  expect_words(m, 0, 4096, 0, "bytes before the range");
  expect_words(m, 4096 + 128 * 1024, b.size() - 4096 - 128 * 1024, 0, "bytes after the range");
  return "128 KiB filled with 0xdeadbeef, fence " + std::to_string(f.value);
}

std::string check_copy(Session& s) {
  Device& dev = s.device();
  Buffer src = dev.alloc(128 * 1024);
  Buffer dst = dev.alloc(128 * 1024);
  Mapping ms = src.map();
  Mapping md = dst.map();
  for (std::uint64_t o = 0; o < ms.size(); ++o) ms.bytes()[o] = static_cast<std::byte>(o * 7 + 3);
  const Fence f = dev.submit(job::copy(dst.handle(), 100, src.handle(), 1000, 64 * 1024));
  wait_done(dev, f);
  if (std::memcmp(md.bytes().data() + 100, ms.bytes().data() + 1000, 64 * 1024) != 0)
    throw Error("destination differs from source", 0);
  expect(md.bytes()[99] == std::byte{0} && md.bytes()[100 + 64 * 1024] == std::byte{0},
         "bytes outside the destination range changed");
  return "64 KiB copied at unaligned offsets";
}

std::string check_checksum(Session& s) {
  Device& dev = s.device();
  Buffer src = dev.alloc(64 * 1024);
  Buffer out = dev.alloc(4096);
  Mapping ms = src.map();
  Mapping mo = out.map();
  for (std::uint64_t o = 0; o < ms.size(); ++o)
    ms.bytes()[o] = static_cast<std::byte>((o * 131) ^ (o >> 8));
  const Fence f = dev.submit(job::checksum(out.handle(), 8, src.handle(), 3, 60000));
  wait_done(dev, f);
  const std::uint32_t want = crc32(ms.bytes().subspan(3, 60000));
  const std::uint32_t got = word_at(mo, 8);
  expect(got == want, "device says " + hex(got) + ", client computes " + hex(want));
  return "crc32 " + hex(got) + " of 60000 bytes";
}

std::string check_wait(Session& s) {
  Device& dev = s.device();
  Buffer b = dev.alloc(4096);
  Fence last{};
  for (int i = 0; i < 16; ++i)
    last = dev.submit(job::fill(b.handle(), 0, 4096, static_cast<std::uint32_t>(i)));
  fakegpu_wait w{};
  w.fence = last.value;
  w.timeout_ns = -1;
  if (const int err = dev.try_ioctl(FAKEGPU_IOCTL_WAIT, &w))
    throw Error("WAIT for fence " + std::to_string(last.value), err);
  expect(w.completed >= last.value, "WAIT returned with completed " + std::to_string(w.completed));
  expect(dev.poll(last), "fence page does not show fence " + std::to_string(last.value));
  w = {};
  w.fence = last.value + 1000;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_WAIT, &w), EINVAL, "WAIT for a fence never issued");
  w = {};
  w.fence = last.value;
  w.flags = 1;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_WAIT, &w), EINVAL, "WAIT with non-zero flags");
  return "16 jobs, fence " + std::to_string(last.value) + " seen by WAIT and the fence page";
}

std::string check_quota(Session& s) {
  // A context of its own, so the whole quota is ours.
  Device dev = Device::open(s.path, s.access);
  const auto info = dev.info();
  std::vector<Buffer> bufs;
  int err = 0;
  while (bufs.size() <= info.handle_quota) {
    try {
      bufs.push_back(dev.alloc(4096));
    } catch (const Error& e) {
      err = e.code();
      if (err != EDQUOT)
        throw Error("alloc of handle " + std::to_string(bufs.size() + 1) + " of " +
                        std::to_string(info.handle_quota) + " (want EDQUOT only past the quota)",
                    err);
      break;
    }
  }
  expect(err == EDQUOT, "" + std::to_string(bufs.size()) +
                            " allocations succeeded, handle quota is " +
                            std::to_string(info.handle_quota));
  expect(bufs.size() == info.handle_quota, "EDQUOT after " + std::to_string(bufs.size()) +
                                               " handles, handle quota is " +
                                               std::to_string(info.handle_quota));
  bufs.clear();
  const auto after = dev.info();
  expect(after.ctx_mem_used == 0 && after.ctx_handles == 0,
         "" + std::to_string(after.ctx_mem_used) + " bytes, " + std::to_string(after.ctx_handles) +
             " handles still charged after freeing everything");
  std::string memory = "memory quota not probed (larger than the largest buffer)";
  if (info.mem_quota + 4096 <= FAKEGPU_MAX_BUFFER_SIZE) {
    fakegpu_alloc a{};
    a.size = info.mem_quota + 4096;
    expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_ALLOC, &a), EDQUOT, "alloc of mem_quota + 4096 bytes");
    memory = "EDQUOT for " + std::to_string(info.mem_quota / kMiB) + " MiB + 4 KiB";
  }
  return "EDQUOT after " + std::to_string(info.handle_quota) + " handles, " + memory +
         ", all returned on free";
}

std::string check_bad_handle(Session& s) {
  Device& dev = s.device();
  fakegpu_free f{};
  f.handle = 0;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_FREE, &f), ENOENT, "free handle 0");
  f.handle = 0xffffff;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_FREE, &f), ENOENT, "free handle never allocated");

  Buffer b = dev.alloc(4096);
  const std::uint32_t stale = b.handle();
  b.free();
  f.handle = stale;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_FREE, &f), ENOENT,
               "second free of handle " + std::to_string(stale));
  fakegpu_map m{};
  m.handle = stale;
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_MAP, &m), ENOENT,
               "map of freed handle " + std::to_string(stale));
  fakegpu_submit sub{};
  sub.job = job::fill(stale, 0, 4096, 1);
  expect_errno(dev.try_ioctl(FAKEGPU_IOCTL_SUBMIT, &sub), ENOENT, "fill job on freed handle");
  Buffer next = dev.alloc(4096);
  expect(next.handle() != stale,
         "freed handle " + std::to_string(stale) + " handed out again at once");
  return "ENOENT for handle 0, unknown, double free, stale map and stale job";
}

std::string check_isolation(Session& s) {
  Device& one = s.device();
  Buffer mine = one.alloc(4096);
  Mapping m1 = mine.map();
  wait_done(one, one.submit(job::fill(mine.handle(), 0, 4096, 0x11111111)));

  Device two = Device::open(s.path, s.access);
  fakegpu_map m{};
  m.handle = mine.handle();
  // A fresh context may reuse the number only once it allocates; before that the
  // first context's handle must mean nothing here.
  expect_errno(two.try_ioctl(FAKEGPU_IOCTL_MAP, &m), ENOENT,
               "second context maps the first one's handle");
  Buffer theirs = two.alloc(4096);
  Mapping m2 = theirs.map();
  wait_done(two, two.submit(job::fill(theirs.handle(), 0, 4096, 0x22222222)));
  expect_words(m1, 0, 4096, 0x11111111, "first context's buffer after the second one's fill");
  expect_words(m2, 0, 4096, 0x22222222, "second context's buffer");
  return "handle " + std::to_string(mine.handle()) +
         " unknown to a second context; buffers independent";
}

std::string check_ring(Session& s) {
  Device& dev = s.device();
  Buffer data = dev.alloc(64 * 1024);
  Buffer out = dev.alloc(4096);
  Mapping md = data.map();
  Mapping mo = out.map();
  const auto errors_before = dev.fence_page().errors;
  Ring& ring = dev.ring();

  const std::uint64_t ioctls_before = ioctl_count();
  constexpr int kNops = 200;
  ring.push(job::fill(data.handle(), 0, 64 * 1024, 0xcafef00d));
  for (int i = 0; i < kNops; ++i) ring.push(job::nop());
  ring.push(job::checksum(out.handle(), 0, data.handle(), 0, 64 * 1024));
  const Fence last = ring.flush();
  wait_done(dev, last);
  const std::uint64_t ioctls = ioctl_count() - ioctls_before;

  expect_words(md, 0, 64 * 1024, 0xcafef00d, "buffer filled by a ring job");
  std::vector<std::byte> expected(64 * 1024);
  for (std::size_t o = 0; o < expected.size(); o += 4)
    std::memcpy(&expected[o], "\x0d\xf0\xfe\xca", 4);
  const std::uint32_t want = crc32(expected);
  expect(word_at(mo, 0) == want,
         "checksum job wrote " + hex(word_at(mo, 0)) + ", want " + hex(want));
  const auto& fp = dev.fence_page();
  expect(fp.errors == errors_before, "driver reports " + std::to_string(fp.errors - errors_before) +
                                         " failed ring jobs, last error " +
                                         errno_name(-fp.last_error));
  return std::to_string(kNops + 2) + " jobs through the ring with " + std::to_string(ioctls) +
         " ioctl(s)";
}

std::string check_reset(Session& s) {
  const unsigned count = s.device().reset();
  return "device reset, reset count " + std::to_string(count);
}

using CheckFn = std::string (*)(Session&);

const std::map<std::string_view, CheckFn>& check_functions() {
  static const std::map<std::string_view, CheckFn> fns{
      {"open", check_open},           {"info", check_info},
      {"alloc", check_alloc},         {"map", check_map},
      {"fill", check_fill},           {"copy", check_copy},
      {"checksum", check_checksum},   {"wait", check_wait},
      {"quota", check_quota},         {"bad-handle", check_bad_handle},
      {"isolation", check_isolation}, {"ring", check_ring},
      {"reset", check_reset},
  };
  return fns;
}

}  // namespace

std::vector<Outcome> run_checks(const std::string& path, const std::vector<CheckSpec>& checks,
                                Access access) {
  Session session{path, access, std::nullopt};
  std::vector<Outcome> outcomes;
  for (const auto& spec : checks) {
    Outcome o;
    o.name = std::string(spec.name);
    try {
      o.detail = check_functions().at(spec.name)(session);
      o.ok = true;
    } catch (const Error& e) {
      o.step = e.step();
      o.err = e.code();
    }
    outcomes.push_back(std::move(o));
    if (!outcomes.back().ok) break;
  }
  return outcomes;
}

}  // namespace fakegpu::client
