// SPDX-License-Identifier: MIT
/*
 * fakegpu-abi-test - the adversarial ABI tests of fakegpu.ko.
 *
 *   fakegpu-abi-test [--device /dev/fakegpu0] [--ctl /dev/fakegpuctl] [GROUP...]
 *
 * GROUPs (default: all but reset-eperm): numbers info alloc handles submit
 * wait mmap ring readonly inflight quota reset; reset-eperm expects the
 * privileged ioctl to be refused (run it unprivileged, or as root in
 * unshare -Ur).  readonly opens the node O_RDONLY (and O_WRONLY) itself.
 *
 * Every check asserts one exact outcome (an errno, or a value), so a driver
 * that accepts garbage or answers with the wrong errno fails here.  Raw
 * syscalls only: this tests the kernel ABI, not libfakegpu.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kmod_test.h"

static const char* dev_path = "/dev/fakegpu0";
static const char* ctl_path = "/dev/fakegpuctl";
static long page_size;

static int open_dev(void) {
  int fd = open(dev_path, O_RDWR | O_CLOEXEC);

  if (fd < 0) {
    printf("# open %s: %s\n", dev_path, strerror(errno));
    exit(2);
  }
  return fd;
}

static struct fakegpu_info get_info(int fd) {
  struct fakegpu_info info;

  memset(&info, 0, sizeof(info));
  if (ioctl(fd, FAKEGPU_IOCTL_INFO, &info)) {
    printf("# INFO: %s\n", strerror(errno));
    exit(2);
  }
  return info;
}

static int do_alloc(int fd, uint64_t size, uint32_t* handle) {
  struct fakegpu_alloc a;

  memset(&a, 0, sizeof(a));
  a.size = size;
  if (ioctl(fd, FAKEGPU_IOCTL_ALLOC, &a)) return errno;
  *handle = a.handle;
  return 0;
}

static uint32_t must_alloc(int fd, uint64_t size) {
  uint32_t h = 0;
  int err = do_alloc(fd, size, &h);

  if (err) {
    printf("# ALLOC %llu: %s\n", (unsigned long long)size, kt_errname(err));
    exit(2);
  }
  return h;
}

static int do_free(int fd, uint32_t handle) {
  struct fakegpu_free f;

  memset(&f, 0, sizeof(f));
  f.handle = handle;
  return kt_ioctl(fd, FAKEGPU_IOCTL_FREE, &f);
}

static int do_submit(int fd, const struct fakegpu_job* job, uint64_t* fence) {
  struct fakegpu_submit s;

  memset(&s, 0, sizeof(s));
  s.job = *job;
  if (ioctl(fd, FAKEGPU_IOCTL_SUBMIT, &s)) return errno;
  if (fence) *fence = s.fence;
  return 0;
}

static int do_wait(int fd, uint64_t fence, int64_t timeout_ns) {
  struct fakegpu_wait w;

  memset(&w, 0, sizeof(w));
  w.fence = fence;
  w.timeout_ns = timeout_ns;
  return kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w);
}

static struct fakegpu_job fill_job(uint32_t h, uint64_t off, uint64_t len, uint32_t value) {
  struct fakegpu_job j;

  memset(&j, 0, sizeof(j));
  j.op = FAKEGPU_OP_FILL;
  j.dst_handle = h;
  j.dst_offset = off;
  j.length = len;
  j.value = value;
  return j;
}

static struct fakegpu_job copy_job(uint32_t dst, uint64_t doff, uint32_t src, uint64_t soff,
                                   uint64_t len) {
  struct fakegpu_job j;

  memset(&j, 0, sizeof(j));
  j.op = FAKEGPU_OP_COPY;
  j.dst_handle = dst;
  j.dst_offset = doff;
  j.src_handle = src;
  j.src_offset = soff;
  j.length = len;
  return j;
}

static int submit_errno(int fd, struct fakegpu_job j) {
  return do_submit(fd, &j, NULL);
}

static void* map_or_null(int fd, size_t len, int prot, int flags, uint64_t off, int* err) {
  void* p = mmap(NULL, len, prot, flags, fd, (off_t)off);

  *err = p == MAP_FAILED ? errno : 0;
  return p == MAP_FAILED ? NULL : p;
}

/* mmap's result as an errno; unmaps on success. */
static int mmap_errno(int fd, size_t len, int prot, int flags, uint64_t off) {
  int err;
  void* p = map_or_null(fd, len, prot, flags, off, &err);

  if (p) munmap(p, len);
  return err;
}

/* A page whose contents are `init` and which the kernel can read but not write. */
static void* readonly_page(const void* init, size_t len) {
  void* p = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

  if (p == MAP_FAILED) exit(2);
  memcpy(p, init, len);
  mprotect(p, page_size, PROT_READ);
  return p;
}

/* ---- ioctl numbers: anything but the exact command is ENOTTY ---- */

static void group_numbers(int fd) {
  struct fakegpu_submit big[2];

  memset(big, 0, sizeof(big));
  kt_expect("numbers: unknown command nr 0x7f",
            kt_ioctl(fd, _IOWR(FAKEGPU_IOCTL_BASE, 0x7f, struct fakegpu_info), big), ENOTTY);
  kt_expect("numbers: INFO with a struct 8 bytes short",
            kt_ioctl(fd,
                     _IOC(_IOC_READ | _IOC_WRITE, FAKEGPU_IOCTL_BASE, 0x00,
                          sizeof(struct fakegpu_info) - 8),
                     big),
            ENOTTY);
  kt_expect("numbers: INFO with a struct 8 bytes long",
            kt_ioctl(fd,
                     _IOC(_IOC_READ | _IOC_WRITE, FAKEGPU_IOCTL_BASE, 0x00,
                          sizeof(struct fakegpu_info) + 8),
                     big),
            ENOTTY);
  kt_expect("numbers: INFO as _IOR (wrong direction)",
            kt_ioctl(fd, _IOR(FAKEGPU_IOCTL_BASE, 0x00, struct fakegpu_info), big), ENOTTY);
  kt_expect("numbers: SUBMIT as _IOW (wrong direction)",
            kt_ioctl(fd, _IOW(FAKEGPU_IOCTL_BASE, 0x04, struct fakegpu_submit), big), ENOTTY);
  kt_expect(
      "numbers: SUBMIT with ALLOC's struct size",
      kt_ioctl(fd,
               _IOC(_IOC_READ | _IOC_WRITE, FAKEGPU_IOCTL_BASE, 0x04, sizeof(struct fakegpu_alloc)),
               big),
      ENOTTY);
  kt_expect("numbers: another driver's type byte",
            kt_ioctl(fd, _IOWR('Q', 0x00, struct fakegpu_info), big), ENOTTY);
}

/* ---- INFO and the control node ---- */

static void group_info(int fd) {
  struct fakegpu_info info;
  void* ro;
  int ctl, err;

  memset(&info, 0, sizeof(info));
  kt_expect("info: INFO succeeds", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, &info), 0);
  kt_true("info: abi_version is FAKEGPU_ABI_VERSION", info.abi_version == FAKEGPU_ABI_VERSION,
          "wrong abi_version");
  kt_true("info: ring_entries is a power of two",
          info.ring_entries && !(info.ring_entries & (info.ring_entries - 1)),
          "not a power of two");
  kt_true("info: sq_map_size holds the ring",
          info.sq_map_size >=
              FAKEGPU_SQ_ENTRIES_OFFSET + (uint64_t)info.ring_entries * sizeof(struct fakegpu_job),
          "sq_map_size too small");
  printf("# device %u of %u, mem_quota %llu, handle_quota %u, vram %llu\n", info.device_index,
         info.device_count, (unsigned long long)info.mem_quota, info.handle_quota,
         (unsigned long long)info.vram_size);

  memset(&info, 0, sizeof(info));
  info.reserved[1] = 1;
  kt_expect("info: non-zero reserved[1]", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, &info), EINVAL);
  memset(&info, 0, sizeof(info));
  info.pad = 1;
  kt_expect("info: non-zero pad", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, &info), EINVAL);
  kt_expect("info: NULL argument", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, NULL), EFAULT);
  kt_expect("info: argument pointer 0x1", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, (void*)1), EFAULT);
  kt_expect("info: kernel-half pointer",
            kt_ioctl(fd, FAKEGPU_IOCTL_INFO, (void*)0xffff888000000000ULL), EFAULT);
  memset(&info, 0, sizeof(info));
  ro = readonly_page(&info, sizeof(info));
  kt_expect("info: read-only argument (copy_to_user fails)", kt_ioctl(fd, FAKEGPU_IOCTL_INFO, ro),
            EFAULT);
  munmap(ro, page_size);

  ctl = open(ctl_path, O_RDWR | O_CLOEXEC);
  if (!kt_true("info: control node opens", ctl >= 0, strerror(errno))) return;
  memset(&info, 0, sizeof(info));
  err = kt_ioctl(ctl, FAKEGPU_IOCTL_INFO, &info);
  kt_expect("info: INFO on the control node", err, 0);
  kt_true("info: control node reports minor 255", info.device_index == FAKEGPU_CTL_MINOR,
          "wrong device_index");
  kt_true("info: control node reports the device count", info.device_count >= 1, "device_count 0");
  {
    struct fakegpu_alloc a;

    memset(&a, 0, sizeof(a));
    a.size = 4096;
    kt_expect("info: ALLOC on the control node", kt_ioctl(ctl, FAKEGPU_IOCTL_ALLOC, &a), ENOTTY);
  }
  kt_expect("info: mmap of the control node", mmap_errno(ctl, page_size, PROT_READ, MAP_SHARED, 0),
            ENODEV);
  close(ctl);
}

/* ---- ALLOC ---- */

static void group_alloc(int fd) {
  struct fakegpu_info before = get_info(fd), after;
  struct fakegpu_alloc a, *ro;
  uint32_t h = 0;

  kt_expect("alloc: size 0", do_alloc(fd, 0, &h), EINVAL);
  kt_expect("alloc: size 2^62", do_alloc(fd, 1ULL << 62, &h), EINVAL);
  kt_expect("alloc: size UINT64_MAX", do_alloc(fd, UINT64_MAX, &h), EINVAL);
  kt_expect("alloc: size FAKEGPU_MAX_BUFFER_SIZE + 1",
            do_alloc(fd, FAKEGPU_MAX_BUFFER_SIZE + 1, &h), EINVAL);
  if (before.mem_quota < FAKEGPU_MAX_BUFFER_SIZE)
    kt_expect("alloc: size mem_quota + 1", do_alloc(fd, before.mem_quota + 1, &h), EDQUOT);
  memset(&a, 0, sizeof(a));
  a.size = 4096;
  a.flags = 1;
  kt_expect("alloc: non-zero flags", kt_ioctl(fd, FAKEGPU_IOCTL_ALLOC, &a), EINVAL);
  a.flags = 0;
  a.reserved = 1;
  kt_expect("alloc: non-zero reserved", kt_ioctl(fd, FAKEGPU_IOCTL_ALLOC, &a), EINVAL);

  memset(&a, 0, sizeof(a));
  a.size = 1;
  kt_expect("alloc: size 1", kt_ioctl(fd, FAKEGPU_IOCTL_ALLOC, &a), 0);
  kt_true("alloc: size 1 rounds up to one page", a.alloc_size == (uint64_t)page_size,
          "alloc_size is not a page");
  kt_true("alloc: handles start at 1", a.handle >= 1, "handle 0");
  after = get_info(fd);
  kt_true("alloc: charged to the context",
          after.ctx_mem_used == before.ctx_mem_used + a.alloc_size &&
              after.ctx_handles == before.ctx_handles + 1,
          "ctx_mem_used/ctx_handles wrong");
  do_free(fd, a.handle);

  /* The handle is created, then copy_to_user fails: the driver must take it back. */
  memset(&a, 0, sizeof(a));
  a.size = 8192;
  ro = readonly_page(&a, sizeof(a));
  kt_expect("alloc: read-only argument", kt_ioctl(fd, FAKEGPU_IOCTL_ALLOC, ro), EFAULT);
  munmap(ro, page_size);
  after = get_info(fd);
  kt_true("alloc: EFAULT on copy-out leaks no handle or memory",
          after.ctx_mem_used == before.ctx_mem_used && after.ctx_handles == before.ctx_handles,
          "leaked");
}

/* ---- handles: unknown, stale, double-freed, foreign ---- */

static void group_handles(int fd) {
  struct fakegpu_map m;
  struct fakegpu_free f;
  uint32_t h, h2;
  int other;

  kt_expect("handles: free handle 0", do_free(fd, 0), ENOENT);
  kt_expect("handles: free handle 0xffffffff", do_free(fd, 0xffffffffu), ENOENT);
  kt_expect("handles: free handle never allocated", do_free(fd, 4242), ENOENT);
  memset(&f, 0, sizeof(f));
  f.handle = must_alloc(fd, 4096);
  f.flags = 1;
  kt_expect("handles: free with non-zero flags", kt_ioctl(fd, FAKEGPU_IOCTL_FREE, &f), EINVAL);
  f.flags = 0;
  f.reserved = 1;
  kt_expect("handles: free with non-zero reserved", kt_ioctl(fd, FAKEGPU_IOCTL_FREE, &f), EINVAL);
  h = f.handle;
  kt_expect("handles: free", do_free(fd, h), 0);
  kt_expect("handles: double free", do_free(fd, h), ENOENT);

  memset(&m, 0, sizeof(m));
  m.handle = h;
  kt_expect("handles: map of a stale handle", kt_ioctl(fd, FAKEGPU_IOCTL_MAP, &m), ENOENT);
  kt_expect("handles: job on a stale handle", submit_errno(fd, fill_job(h, 0, 4096, 1)), ENOENT);
  h2 = must_alloc(fd, 4096);
  kt_true("handles: a freed handle is not handed out again at once", h2 != h,
          "handle reused immediately");
  m.handle = h2;
  m.flags = 1;
  kt_expect("handles: map with non-zero flags", kt_ioctl(fd, FAKEGPU_IOCTL_MAP, &m), EINVAL);
  m.flags = 0;
  m.reserved = 1;
  kt_expect("handles: map with non-zero reserved", kt_ioctl(fd, FAKEGPU_IOCTL_MAP, &m), EINVAL);
  m.reserved = 0;
  kt_expect("handles: map", kt_ioctl(fd, FAKEGPU_IOCTL_MAP, &m), 0);
  kt_true("handles: map offset is handle << 32",
          m.offset == ((uint64_t)h2 << 32) && m.size == (uint64_t)page_size,
          "unexpected offset/size");

  /* A second context of the same device: the first one's handles mean nothing there. */
  other = open_dev();
  m.handle = h2;
  kt_expect("handles: foreign handle: map", kt_ioctl(other, FAKEGPU_IOCTL_MAP, &m), ENOENT);
  kt_expect("handles: foreign handle: job", submit_errno(other, fill_job(h2, 0, 4096, 1)), ENOENT);
  kt_expect("handles: foreign handle: free", do_free(other, h2), ENOENT);
  kt_expect("handles: foreign handle: mmap",
            mmap_errno(other, page_size, PROT_READ, MAP_SHARED, (uint64_t)h2 << 32), EINVAL);
  close(other);
  kt_expect("handles: own handle survives the foreign attempts", do_free(fd, h2), 0);
}

/* ---- SUBMIT: every field validated ---- */

static void group_submit(int fd) {
  uint64_t mem_before = get_info(fd).ctx_mem_used;
  uint32_t h = must_alloc(fd, 16384);
  struct fakegpu_submit s;
  struct fakegpu_job j;
  uint64_t fence = 0;

  memset(&j, 0, sizeof(j));
  j.op = FAKEGPU_OP_COUNT;
  kt_expect("submit: op FAKEGPU_OP_COUNT", submit_errno(fd, j), EINVAL);
  j.op = 0xffffffffu;
  kt_expect("submit: op 0xffffffff", submit_errno(fd, j), EINVAL);
  j = fill_job(h, 0, 4096, 1);
  j.flags = 1;
  kt_expect("submit: non-zero job flags", submit_errno(fd, j), EINVAL);
  j = fill_job(h, 0, 4096, 1);
  j.pad = 1;
  kt_expect("submit: non-zero job pad", submit_errno(fd, j), EINVAL);
  j = fill_job(h, 0, 4096, 1);
  j.reserved[1] = 1;
  kt_expect("submit: non-zero job reserved", submit_errno(fd, j), EINVAL);
  memset(&s, 0, sizeof(s));
  s.job = fill_job(h, 0, 4096, 1);
  s.reserved = 1;
  kt_expect("submit: non-zero submit reserved", kt_ioctl(fd, FAKEGPU_IOCTL_SUBMIT, &s), EINVAL);

  memset(&j, 0, sizeof(j));
  j.length = 4;
  kt_expect("submit: NOP with a length", submit_errno(fd, j), EINVAL);
  memset(&j, 0, sizeof(j));
  j.dst_handle = h;
  kt_expect("submit: NOP with a handle", submit_errno(fd, j), EINVAL);
  memset(&j, 0, sizeof(j));
  kt_expect("submit: NOP", do_submit(fd, &j, &fence), 0);
  kt_true("submit: fences start at 1 and grow", fence >= 1, "fence 0");

  kt_expect("submit: fill of length 0", submit_errno(fd, fill_job(h, 0, 0, 1)), EINVAL);
  kt_expect("submit: fill past the end", submit_errno(fd, fill_job(h, 16384 - 4, 8, 1)), EINVAL);
  kt_expect("submit: fill with offset+length overflowing u64",
            submit_errno(fd, fill_job(h, UINT64_MAX - 3, 8, 1)), EINVAL);
  kt_expect("submit: fill at an unaligned offset", submit_errno(fd, fill_job(h, 2, 8, 1)), EINVAL);
  kt_expect("submit: fill of an unaligned length", submit_errno(fd, fill_job(h, 0, 6, 1)), EINVAL);
  j = fill_job(h, 0, 8, 1);
  j.src_handle = h;
  kt_expect("submit: fill with a source handle", submit_errno(fd, j), EINVAL);
  kt_expect("submit: fill of the whole buffer", submit_errno(fd, fill_job(h, 0, 16384, 7)), 0);
  kt_expect("submit: fill on handle 0", submit_errno(fd, fill_job(0, 0, 8, 1)), ENOENT);

  kt_expect("submit: copy with overlapping ranges", submit_errno(fd, copy_job(h, 0, h, 100, 200)),
            EINVAL);
  kt_expect("submit: copy within one buffer, disjoint",
            submit_errno(fd, copy_job(h, 0, h, 8192, 8192)), 0);
  kt_expect("submit: copy with the source past the end",
            submit_errno(fd, copy_job(h, 0, h, 12288, 8192)), EINVAL);
  j = copy_job(h, 0, h, 8192, 8);
  j.value = 5;
  kt_expect("submit: copy with a value", submit_errno(fd, j), EINVAL);
  kt_expect("submit: copy from a missing handle", submit_errno(fd, copy_job(h, 0, 999, 0, 8)),
            ENOENT);

  j = copy_job(h, 2, h, 0, 64);
  j.op = FAKEGPU_OP_CHECKSUM;
  kt_expect("submit: checksum to an unaligned offset", submit_errno(fd, j), EINVAL);
  j.dst_offset = 16384 - 2;
  kt_expect("submit: checksum result past the end", submit_errno(fd, j), EINVAL);
  j.dst_offset = 16384 - 4;
  kt_expect("submit: checksum into the last word", do_submit(fd, &j, &fence), 0);
  kt_expect("submit: wait for the accepted jobs", do_wait(fd, fence, -1), 0);
  kt_expect("submit: free the buffer", do_free(fd, h), 0);
  /* Every rejected job above took and had to drop buffer references. */
  kt_true("submit: rejected jobs leak no buffer reference", get_info(fd).ctx_mem_used == mem_before,
          "memory still charged after free: a job leaked a reference");
}

/* ---- WAIT ---- */

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
  (void)sig;
  alarms++;
}

/* Queue `n` fills of a whole `size`-byte buffer: long work for the engine. */
static uint64_t queue_heavy(int fd, uint32_t h, uint64_t size, int n) {
  uint64_t fence = 0;
  int i;

  for (i = 0; i < n; i++) {
    struct fakegpu_job j = fill_job(h, 0, size, (uint32_t)i);
    int err = do_submit(fd, &j, &fence);

    if (err) {
      printf("# queue_heavy: %s after %d jobs\n", kt_errname(err), i);
      break;
    }
  }
  return fence;
}

static void group_wait(int fd) {
  struct fakegpu_info info = get_info(fd);
  uint64_t size = info.mem_quota < (16u << 20) ? info.mem_quota : (16u << 20);
  struct fakegpu_wait w;
  struct sigaction sa;
  struct itimerval it;
  uint32_t h = must_alloc(fd, size);
  uint64_t last;
  int err;

  kt_expect("wait: fence 0", do_wait(fd, 0, -1), EINVAL);
  last = queue_heavy(fd, h, size, 1);
  kt_expect("wait: fence never issued (last + 1)", do_wait(fd, last + 1, -1), EINVAL);
  kt_expect("wait: fence UINT64_MAX", do_wait(fd, UINT64_MAX, -1), EINVAL);
  memset(&w, 0, sizeof(w));
  w.fence = last;
  w.flags = 1;
  kt_expect("wait: non-zero flags", kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w), EINVAL);
  w.flags = 0;
  w.pad = 1;
  kt_expect("wait: non-zero pad", kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w), EINVAL);
  w.pad = 0;
  w.reserved = 1;
  kt_expect("wait: non-zero reserved", kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w), EINVAL);
  kt_expect("wait: a completed fence", do_wait(fd, last, -1), 0);
  kt_expect("wait: a completed fence with timeout 0", do_wait(fd, last, 0), 0);

  /* ~1 GiB of fills: far longer than the timeouts below, even natively. */
  last = queue_heavy(fd, h, size, (int)((1u << 30) / size));
  kt_expect("wait: pending fence, timeout 0 (poll)", do_wait(fd, last, 0), EBUSY);
  kt_expect("wait: pending fence, timeout 1 us", do_wait(fd, last, 1000), ETIMEDOUT);

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm; /* no SA_RESTART */
  sigaction(SIGALRM, &sa, NULL);
  memset(&it, 0, sizeof(it));
  it.it_value.tv_usec = 20000;
  setitimer(ITIMER_REAL, &it, NULL);
  err = do_wait(fd, last, 30LL * 1000000000LL);
  kt_expect("wait: a signal interrupts a timed WAIT", err, EINTR);
  signal(SIGALRM, SIG_DFL);
  memset(&w, 0, sizeof(w));
  w.fence = last;
  w.timeout_ns = -1;
  kt_expect("wait: forever, until the fence completes", kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w), 0);
  kt_true("wait: reports the completed fence", w.completed >= last, "completed < fence");
  do_free(fd, h);
}

/* ---- mmap ---- */

static void group_mmap(int fd) {
  struct fakegpu_info info = get_info(fd);
  struct fakegpu_map m;
  uint32_t h = must_alloc(fd, 3 * page_size);
  uint64_t off = (uint64_t)h << 32, mem_before;
  uint32_t* p;
  void* fp;
  pid_t pid;
  int err, status;

  kt_expect("mmap: whole buffer",
            mmap_errno(fd, 3 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, off), 0);
  kt_expect("mmap: part of a buffer",
            mmap_errno(fd, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, off), 0);
  kt_expect("mmap: one page more than the buffer",
            mmap_errno(fd, 4 * page_size, PROT_READ, MAP_SHARED, off), EINVAL);
  kt_expect("mmap: unaligned offset", mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, off + 1),
            EINVAL);
  kt_expect("mmap: offset inside a buffer",
            mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, off + page_size), EINVAL);
  kt_expect("mmap: offset of a handle not allocated",
            mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, 0xfffULL << 32), EINVAL);
  kt_expect("mmap: offset past the handle space",
            mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, 1ULL << 60), EINVAL);
  kt_expect("mmap: offset naming nothing", mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, 0x5000),
            EINVAL);
  kt_expect("mmap: MAP_PRIVATE", mmap_errno(fd, page_size, PROT_READ, MAP_PRIVATE, off), EINVAL);

  kt_expect("mmap: fence page read-only",
            mmap_errno(fd, page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET), 0);
  kt_expect(
      "mmap: fence page writable",
      mmap_errno(fd, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET),
      EACCES);
  kt_expect("mmap: fence page, two pages",
            mmap_errno(fd, 2 * page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET),
            EINVAL);
  fp = map_or_null(fd, page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET, &err);
  if (fp) {
    kt_expect("mmap: mprotect of the fence page to writable",
              mprotect(fp, page_size, PROT_READ | PROT_WRITE) ? errno : 0, EACCES);
    munmap(fp, page_size);
  }
  kt_expect("mmap: submission ring, one page too many",
            mmap_errno(fd, info.sq_map_size + page_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                       FAKEGPU_MMAP_SQ_OFFSET),
            EINVAL);
  kt_expect(
      "mmap: submission ring",
      mmap_errno(fd, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED, FAKEGPU_MMAP_SQ_OFFSET),
      0);

  /* Freed while mapped: the memory lives (and stays charged) until munmap. */
  p = map_or_null(fd, 3 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED, off, &err);
  if (!kt_true("mmap: map for the free-while-mapped test", p != NULL, kt_errname(err))) return;
  p[0] = 0x12345678;
  mem_before = get_info(fd).ctx_mem_used;
  kt_expect("mmap: free while mapped", do_free(fd, h), 0);
  p[1] = 0x9abcdef0;
  kt_true("mmap: mapping still works after free", p[0] == 0x12345678 && p[1] == 0x9abcdef0,
          "contents lost");
  kt_true("mmap: memory stays charged while mapped", get_info(fd).ctx_mem_used == mem_before,
          "uncharged too early");
  memset(&m, 0, sizeof(m));
  m.handle = h;
  kt_expect("mmap: the handle is gone nevertheless", kt_ioctl(fd, FAKEGPU_IOCTL_MAP, &m), ENOENT);

  /* fork duplicates the vma (vm_ops->open); both unmaps must balance. */
  pid = fork();
  if (pid == 0) {
    p[2] = 0x55aa55aa;
    _exit(0);
  }
  waitpid(pid, &status, 0);
  kt_true("mmap: a forked child writes through the shared mapping", p[2] == 0x55aa55aa,
          "write not seen");
  munmap(p, 3 * page_size);
  kt_true("mmap: memory uncharged after the last munmap",
          get_info(fd).ctx_mem_used == mem_before - 3 * (uint64_t)page_size, "still charged");
}

/* ---- the submission ring ---- */

struct ring {
  struct fakegpu_sq_ctrl* ctrl;
  struct fakegpu_job* slots;
  uint32_t entries;
  size_t size;
};

static int ring_map(int fd, struct ring* r) {
  struct fakegpu_info info = get_info(fd);
  int err;
  void* p = map_or_null(fd, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                        FAKEGPU_MMAP_SQ_OFFSET, &err);

  if (!p) return err;
  r->ctrl = p;
  r->slots = (struct fakegpu_job*)((char*)p + FAKEGPU_SQ_ENTRIES_OFFSET);
  r->entries = info.ring_entries;
  r->size = info.sq_map_size;
  return 0;
}

static void ring_put(struct ring* r, const struct fakegpu_job* j) {
  uint32_t tail = r->ctrl->tail;

  r->slots[tail & (r->entries - 1)] = *j;
  __atomic_store_n(&r->ctrl->tail, tail + 1, __ATOMIC_RELEASE);
}

static int doorbell(int fd, struct fakegpu_doorbell* db) {
  memset(db, 0, sizeof(*db));
  return kt_ioctl(fd, FAKEGPU_IOCTL_DOORBELL, db);
}

static void group_ring(int fd) {
  struct fakegpu_doorbell db;
  const struct fakegpu_fence_page* fp;
  struct fakegpu_job j;
  struct ring r;
  uint64_t f1 = 0, f2 = 0, errors0;
  uint32_t h, *data, tail0;
  int err, fresh = open_dev();

  kt_expect("ring: doorbell before the ring is mapped", doorbell(fresh, &db), EINVAL);
  close(fresh);

  if (!kt_expect("ring: map the ring", ring_map(fd, &r), 0)) return;
  fp = map_or_null(fd, page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET, &err);
  if (!kt_true("ring: map the fence page", fp != NULL, kt_errname(err))) return;
  memset(&db, 0, sizeof(db));
  db.flags = 1;
  kt_expect("ring: doorbell with non-zero flags", kt_ioctl(fd, FAKEGPU_IOCTL_DOORBELL, &db),
            EINVAL);
  memset(&db, 0, sizeof(db));
  db.reserved = 1;
  kt_expect("ring: doorbell with non-zero reserved", kt_ioctl(fd, FAKEGPU_IOCTL_DOORBELL, &db),
            EINVAL);
  kt_expect("ring: doorbell with nothing published", doorbell(fd, &db), 0);
  kt_true("ring: ... accepts nothing", db.count == 0 && db.last_fence == 0,
          "accepted phantom entries");

  tail0 = r.ctrl->tail;
  __atomic_store_n(&r.ctrl->tail, tail0 + r.entries + 1, __ATOMIC_RELEASE);
  kt_expect("ring: tail more than a ring ahead", doorbell(fd, &db), EINVAL);
  __atomic_store_n(&r.ctrl->tail, tail0 - 1, __ATOMIC_RELEASE);
  kt_expect("ring: tail moved backwards", doorbell(fd, &db), EINVAL);
  __atomic_store_n(&r.ctrl->tail, tail0, __ATOMIC_RELEASE);

  /*
   * Good jobs around a malformed one (an unknown op): the driver rejects it
   * and goes on.  A bad handle is not malformed but an MMU fault that poisons
   * the context: fakegpu-xid-test.
   */
  h = must_alloc(fd, page_size);
  data = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)((uint64_t)h << 32));
  errors0 = fp->errors;
  j = fill_job(h, 0, page_size, 0xabababab);
  ring_put(&r, &j);
  memset(&j, 0, sizeof(j));
  j.op = 99;
  ring_put(&r, &j);
  j = fill_job(h, 0, 4, 0xcdcdcdcd);
  ring_put(&r, &j);
  kt_expect("ring: doorbell with three entries", doorbell(fd, &db), 0);
  kt_true("ring: three entries accepted with consecutive fences",
          db.count == 3 && db.last_fence == db.first_fence + 2, "wrong count/fences");
  kt_expect("ring: wait for the batch", do_wait(fd, db.last_fence, -1), 0);
  kt_true("ring: fence page shows the batch complete",
          __atomic_load_n(&fp->completed, __ATOMIC_ACQUIRE) >= db.last_fence, "fence page behind");
  kt_true("ring: head caught up with tail",
          __atomic_load_n(&r.ctrl->head, __ATOMIC_ACQUIRE) == r.ctrl->tail,
          "entries left unconsumed");
  kt_true("ring: one failed entry counted", fp->errors == errors0 + 1, "wrong error count");
  kt_true("ring: last error is the bad op's EINVAL",
          fp->last_error == -EINVAL && fp->last_error_fence == db.first_fence + 1,
          "wrong last_error");
  kt_true("ring: the context is not poisoned by a malformed entry", fp->xid == 0,
          "fence page xid set");
  kt_true("ring: good entries around the bad one ran",
          data[0] == 0xcdcdcdcd && data[1] == 0xabababab, "results missing");

  /* Both paths share one fence sequence, completed in order. */
  memset(&j, 0, sizeof(j));
  do_submit(fd, &j, &f1);
  ring_put(&r, &j);
  doorbell(fd, &db);
  do_submit(fd, &j, &f2);
  kt_true("ring: ioctl and ring fences interleave in submission order",
          db.first_fence == f1 + 1 && f2 == db.first_fence + 1, "fences out of order");
  kt_expect("ring: wait for the last", do_wait(fd, f2, -1), 0);

  munmap(data, page_size);
  munmap((void*)fp, page_size);
  munmap(r.ctrl, r.size);
}

/* ---- access mode: a read-only descriptor may look, not act ---- */

static int open_mode(int flags, const char* what) {
  int fd = open(dev_path, flags | O_CLOEXEC);

  if (fd < 0) kt_fail(what, "open %s: %s", dev_path, strerror(errno));
  return fd;
}

static void group_readonly(int fd) {
  struct fakegpu_info info = get_info(fd), ri;
  const struct fakegpu_fence_page* fp;
  struct fakegpu_doorbell db;
  struct fakegpu_submit s;
  struct fakegpu_alloc a;
  struct fakegpu_reset r;
  struct fakegpu_free f;
  struct fakegpu_map m;
  struct fakegpu_job j;
  struct ring ring;
  uint64_t fence = 0;
  uint32_t h, wh = 0;
  int ro, rw, wo, err;

  ro = open_mode(O_RDONLY, "readonly: O_RDONLY open");
  if (ro < 0) return;
  kt_pass("readonly: O_RDONLY open");

  /* [read]: INFO works and shows an empty context. */
  memset(&ri, 0, sizeof(ri));
  kt_expect("readonly: INFO", kt_ioctl(ro, FAKEGPU_IOCTL_INFO, &ri), 0);
  kt_true("readonly: INFO reports the device, and no buffer of its own",
          ri.abi_version == FAKEGPU_ABI_VERSION && ri.device_index == info.device_index &&
              ri.ctx_handles == 0 && ri.ctx_mem_used == 0,
          "wrong info");

  /* [write]: each command with a valid argument is EBADF and changes nothing. */
  memset(&a, 0, sizeof(a));
  a.size = page_size;
  kt_expect("readonly: ALLOC is EBADF", kt_ioctl(ro, FAKEGPU_IOCTL_ALLOC, &a), EBADF);
  kt_true("readonly: ... and allocates nothing",
          get_info(ro).ctx_handles == 0 && get_info(fd).vram_used == info.vram_used,
          "memory was charged");
  h = must_alloc(fd, page_size); /* a buffer of the read-write context */
  memset(&f, 0, sizeof(f));
  f.handle = 1;
  kt_expect("readonly: FREE is EBADF", kt_ioctl(ro, FAKEGPU_IOCTL_FREE, &f), EBADF);
  memset(&s, 0, sizeof(s)); /* a NOP */
  kt_expect("readonly: SUBMIT of a NOP is EBADF", kt_ioctl(ro, FAKEGPU_IOCTL_SUBMIT, &s), EBADF);
  s.job = fill_job(h, 0, page_size, 1);
  kt_expect("readonly: SUBMIT of a fill naming another context's buffer is EBADF",
            kt_ioctl(ro, FAKEGPU_IOCTL_SUBMIT, &s), EBADF);
  kt_expect("readonly: DOORBELL is EBADF", doorbell(ro, &db), EBADF);
  memset(&r, 0, sizeof(r));
  kt_expect("readonly: RESET is EBADF, before its privilege check",
            kt_ioctl(ro, FAKEGPU_IOCTL_RESET, &r), EBADF);
  kt_true("readonly: ... the device was not reset", get_info(fd).reset_count == info.reset_count,
          "reset_count moved");
  /* The mode comes first: the argument is not even read. */
  kt_expect("readonly: ALLOC with a NULL argument is EBADF, not EFAULT",
            kt_ioctl(ro, FAKEGPU_IOCTL_ALLOC, NULL), EBADF);
  a.flags = 1;
  kt_expect("readonly: ALLOC with non-zero flags is EBADF, not EINVAL",
            kt_ioctl(ro, FAKEGPU_IOCTL_ALLOC, &a), EBADF);
  kt_expect("readonly: an unknown command is still ENOTTY",
            kt_ioctl(ro, _IOWR(FAKEGPU_IOCTL_BASE, 0x7f, struct fakegpu_alloc), &a), ENOTTY);
  kt_expect("readonly: ALLOC with a wrong struct size is still ENOTTY",
            kt_ioctl(ro,
                     _IOC(_IOC_READ | _IOC_WRITE, FAKEGPU_IOCTL_BASE, 0x01,
                          sizeof(struct fakegpu_alloc) + 8),
                     &s),
            ENOTTY);

  /* [read]: WAIT and MAP are allowed, and find nothing: no fence, no handle here. */
  kt_expect("readonly: WAIT is allowed (fence 1 was never issued here: EINVAL)", do_wait(ro, 1, 0),
            EINVAL);
  memset(&m, 0, sizeof(m));
  m.handle = h;
  kt_expect("readonly: MAP is allowed (the read-write context's handle: ENOENT)",
            kt_ioctl(ro, FAKEGPU_IOCTL_MAP, &m), ENOENT);
  kt_expect("readonly: mmap of the read-write context's buffer offset is EINVAL",
            mmap_errno(ro, page_size, PROT_READ, MAP_SHARED, (uint64_t)h << 32), EINVAL);

  /* mmap: the fence page read-only; nothing writable; no ring at all. */
  fp = map_or_null(ro, page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET, &err);
  if (kt_true("readonly: fence page PROT_READ, MAP_SHARED", fp != NULL, kt_errname(err))) {
    kt_true("readonly: ... reads no fence completed", fp->completed == 0 && fp->errors == 0,
            "fence page not empty");
    kt_expect("readonly: mprotect of that mapping to writable is EACCES",
              mprotect((void*)fp, page_size, PROT_READ | PROT_WRITE) ? errno : 0, EACCES);
    munmap((void*)fp, page_size);
  }
  kt_expect(
      "readonly: fence page PROT_WRITE is EACCES",
      mmap_errno(ro, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET),
      EACCES);
  kt_expect(
      "readonly: ring PROT_READ|PROT_WRITE, MAP_SHARED is EACCES",
      mmap_errno(ro, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED, FAKEGPU_MMAP_SQ_OFFSET),
      EACCES);
#ifdef MAP_SHARED_VALIDATE
  kt_expect("readonly: ring PROT_WRITE, MAP_SHARED_VALIDATE is EACCES",
            mmap_errno(ro, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE,
                       FAKEGPU_MMAP_SQ_OFFSET),
            EACCES);
#endif
  kt_expect("readonly: ring PROT_READ only is EACCES too (a reader gets no ring)",
            mmap_errno(ro, info.sq_map_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_SQ_OFFSET),
            EACCES);
  kt_expect(
      "readonly: ring MAP_PRIVATE is EINVAL",
      mmap_errno(ro, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, FAKEGPU_MMAP_SQ_OFFSET),
      EINVAL);
  kt_expect("readonly: DOORBELL still EBADF after the ring mmaps", doorbell(ro, &db), EBADF);
  kt_true("readonly: the read-only context still holds nothing",
          get_info(ro).ctx_handles == 0 && get_info(ro).ctx_mem_used == 0, "it holds something");
  close(ro);
  do_free(fd, h);

  /* O_RDWR, opened beside it: everything still works. */
  rw = open_mode(O_RDWR, "readonly: O_RDWR open beside it");
  if (rw >= 0) {
    kt_expect("readonly: O_RDWR: ALLOC", do_alloc(rw, page_size, &h), 0);
    j = fill_job(h, 0, page_size, 3);
    kt_expect("readonly: O_RDWR: SUBMIT", do_submit(rw, &j, &fence), 0);
    kt_expect("readonly: O_RDWR: WAIT", do_wait(rw, fence, -1), 0);
    if (kt_expect("readonly: O_RDWR: ring PROT_READ|PROT_WRITE", ring_map(rw, &ring), 0)) {
      memset(&j, 0, sizeof(j));
      ring_put(&ring, &j);
      kt_expect("readonly: O_RDWR: DOORBELL", doorbell(rw, &db), 0);
      kt_true("readonly: O_RDWR: ... one entry accepted", db.count == 1, "count != 1");
      kt_expect("readonly: O_RDWR: WAIT for the ring entry", do_wait(rw, db.last_fence, -1), 0);
      munmap(ring.ctrl, ring.size);
    }
    kt_expect("readonly: O_RDWR: FREE", do_free(rw, h), 0);
    close(rw);
  }

  /* O_WRONLY has FMODE_WRITE: every ioctl; but the VFS maps nothing without FMODE_READ. */
  wo = open_mode(O_WRONLY, "readonly: O_WRONLY open");
  if (wo >= 0) {
    kt_expect("readonly: O_WRONLY: ALLOC", do_alloc(wo, page_size, &wh), 0);
    j = fill_job(wh, 0, 4, 1);
    kt_expect("readonly: O_WRONLY: SUBMIT", do_submit(wo, &j, &fence), 0);
    kt_expect("readonly: O_WRONLY: WAIT", do_wait(wo, fence, -1), 0);
    kt_expect("readonly: O_WRONLY: mmap of the fence page is EACCES (the VFS)",
              mmap_errno(wo, page_size, PROT_READ, MAP_SHARED, FAKEGPU_MMAP_FENCE_OFFSET), EACCES);
    kt_expect("readonly: O_WRONLY: FREE", do_free(wo, wh), 0);
    close(wo);
  }
}

/* ---- closing with work in flight ---- */

static void group_inflight(int fd) {
  uint64_t base = get_info(fd).vram_used;
  struct fakegpu_info info = get_info(fd);
  uint64_t size = info.mem_quota < (16u << 20) ? info.mem_quota : (16u << 20);
  struct fakegpu_doorbell db;
  struct fakegpu_job j;
  struct ring r;
  uint64_t last;
  uint32_t h, i;
  void* map;
  int c;

  c = open_dev();
  h = must_alloc(c, size);
  last = queue_heavy(c, h, size, (int)((1u << 30) / size));
  if (ring_map(c, &r) == 0) {
    for (i = 0; i < r.entries; i++) {
      j = fill_job(h, 0, size, i);
      ring_put(&r, &j);
    }
    doorbell(c, &db);
    munmap(r.ctrl, r.size);
  }
  kt_expect("inflight: work is still pending when the context closes", do_wait(c, last, 0), EBUSY);
  close(c);
  kt_true("inflight: close with jobs in flight returns every byte", get_info(fd).vram_used == base,
          "device memory still in use after close");

  /* The mapping keeps the context (and its buffer) until munmap. */
  c = open_dev();
  h = must_alloc(c, page_size);
  map = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, c, (off_t)((uint64_t)h << 32));
  queue_heavy(c, h, page_size, 100);
  close(c);
  kt_true("inflight: a mapping outlives close()",
          map != MAP_FAILED && get_info(fd).vram_used == base + page_size,
          "memory freed under a live mapping");
  if (map != MAP_FAILED) munmap(map, page_size);
  kt_true("inflight: munmap after close releases the context", get_info(fd).vram_used == base,
          "leaked");
}

/* ---- quotas ---- */

static void group_quota(int fd) {
  struct fakegpu_info info = get_info(fd);
  uint64_t base = info.vram_used, chunk;
  uint32_t h, n = 0, handles[4];
  int c, err, ok, i, others[8], nothers = 0;

  c = open_dev();
  while ((err = do_alloc(c, 1, &h)) == 0) n++;
  kt_expect("quota: handles run out with EDQUOT", err, EDQUOT);
  kt_true("quota: exactly handle_quota handles fit", n == info.handle_quota,
          "wrong number of handles");
  kt_true("quota: INFO counts them", get_info(c).ctx_handles == info.handle_quota,
          "ctx_handles wrong");
  close(c);

  c = open_dev();
  chunk = info.mem_quota / 4;
  ok = 1;
  for (i = 0; i < 4; i++) ok = ok && do_alloc(c, chunk, &handles[i]) == 0;
  kt_true("quota: four quarters of mem_quota fit", ok, "allocation below the quota failed");
  kt_expect("quota: one page more is EDQUOT", do_alloc(c, page_size, &h), EDQUOT);
  kt_true("quota: charged exactly mem_quota", get_info(c).ctx_mem_used == info.mem_quota,
          "wrong charge");
  kt_expect("quota: free one quarter", do_free(c, handles[0]), 0);
  kt_expect("quota: then a quarter fits again", do_alloc(c, chunk, &handles[0]), 0);
  kt_true("quota: device memory counts the context",
          get_info(fd).vram_used == base + info.mem_quota, "vram_used wrong");
  close(c);
  kt_true("quota: close returns the memory to the device", get_info(fd).vram_used == base,
          "vram_used not back");

  /* The device pool is shared: fill it from several contexts, then ENOMEM. */
  err = 0;
  while (nothers < 8 && !err) {
    others[nothers++] = open_dev();
    while (!(err = do_alloc(others[nothers - 1], chunk, &h)))
      ;
    err = err == EDQUOT ? 0 : err;
  }
  kt_expect("quota: a full device answers ENOMEM", err, ENOMEM);
  kt_true("quota: ENOMEM only at vram_size", get_info(fd).vram_used + chunk > info.vram_size,
          "ENOMEM too early");
  while (nothers) close(others[--nothers]);
  kt_true("quota: all device memory back after closing", get_info(fd).vram_used == base,
          "vram_used not back");
}

/* ---- the privileged ioctl ---- */

static void group_reset(int fd) {
  struct fakegpu_reset r;
  struct fakegpu_info before = get_info(fd);

  memset(&r, 0, sizeof(r));
  r.flags = 1;
  kt_expect("reset: non-zero flags (as root)", kt_ioctl(fd, FAKEGPU_IOCTL_RESET, &r), EINVAL);
  memset(&r, 0, sizeof(r));
  kt_expect("reset: as root", kt_ioctl(fd, FAKEGPU_IOCTL_RESET, &r), 0);
  kt_true("reset: counts",
          r.reset_count == before.reset_count + 1 && get_info(fd).reset_count == r.reset_count,
          "reset_count did not move");
}

static void group_reset_eperm(int fd) {
  struct fakegpu_reset r;
  unsigned int before = get_info(fd).reset_count;

  memset(&r, 0, sizeof(r));
  kt_expect("reset-eperm: refused without CAP_SYS_ADMIN in the initial namespace",
            kt_ioctl(fd, FAKEGPU_IOCTL_RESET, &r), EPERM);
  kt_true("reset-eperm: device state unchanged", get_info(fd).reset_count == before,
          "reset happened");
}

struct group {
  const char* name;
  void (*run)(int fd);
  bool by_default;
};

static const struct group groups[] = {
    {"numbers", group_numbers, true},
    {"info", group_info, true},
    {"alloc", group_alloc, true},
    {"handles", group_handles, true},
    {"submit", group_submit, true},
    {"wait", group_wait, true},
    {"mmap", group_mmap, true},
    {"ring", group_ring, true},
    {"readonly", group_readonly, true},
    {"inflight", group_inflight, true},
    {"quota", group_quota, true},
    {"reset", group_reset, true},
    {"reset-eperm", group_reset_eperm, false},
};

int main(int argc, char** argv) {
  size_t g, ngroups = sizeof(groups) / sizeof(groups[0]);
  int i, first = 1, fd;
  bool any = false;

  setvbuf(stdout, NULL, _IOLBF, 0);
  page_size = sysconf(_SC_PAGESIZE);
  while (first + 1 < argc && argv[first][0] == '-') {
    if (!strcmp(argv[first], "--device"))
      dev_path = argv[first + 1];
    else if (!strcmp(argv[first], "--ctl"))
      ctl_path = argv[first + 1];
    else
      break;
    first += 2;
  }
  fd = open_dev();
  for (g = 0; g < ngroups; g++) {
    bool wanted = first >= argc && groups[g].by_default;

    for (i = first; i < argc; i++) wanted = wanted || !strcmp(argv[i], groups[g].name);
    if (wanted) {
      any = true;
      groups[g].run(fd);
    }
  }
  if (!any) {
    fprintf(stderr, "fakegpu-abi-test: no such group\n");
    return 2;
  }
  close(fd);
  printf("# %d checks, %d failed\n", kt_checks, kt_failures);
  return kt_failures ? 1 : 0;
}
