// SPDX-License-Identifier: MIT
/*
 * fakegpu-xid-test - Xid events of fakegpu.ko: faults, poisoned contexts,
 * injection, RESET.  Run as root (it injects through debugfs and resets).
 *
 *   fakegpu-xid-test [--device /dev/fakegpu0] [--other /dev/fakegpu1]
 *
 * Each fault kind is checked three ways: the errno the faulted context gets
 * from then on, a second context of the same device that keeps working, and
 * the line in the kernel log (read from /dev/kmsg), with the pid, comm and
 * context id the driver must name.  Injecting 13 arms every context of the
 * device, so this runs alone on the device and uses fresh contexts only.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kmod_test.h"

static const char* dev_path = "/dev/fakegpu0";
static const char* other_path = "/dev/fakegpu1";
static const char* inject_path = "/sys/kernel/debug/fakegpu/inject";
static long page_size;
static unsigned minor;
static unsigned timeout_ms;
static int kmsg = -1;
static char comm[32];
static char klog[1 << 16]; /* the records read from /dev/kmsg so far */
static size_t klog_len;

static int open_path(const char* path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);

  if (fd < 0) {
    printf("# open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  return fd;
}
static int open_dev(void) {
  return open_path(dev_path);
}

static struct fakegpu_info info_of(int fd) {
  struct fakegpu_info info;

  memset(&info, 0, sizeof(info));
  if (ioctl(fd, FAKEGPU_IOCTL_INFO, &info)) {
    printf("# INFO: %s\n", strerror(errno));
    exit(2);
  }
  return info;
}

static int alloc_errno(int fd, uint32_t* handle) {
  struct fakegpu_alloc a;

  memset(&a, 0, sizeof(a));
  a.size = (uint64_t)page_size;
  if (ioctl(fd, FAKEGPU_IOCTL_ALLOC, &a)) return errno;
  if (handle) *handle = a.handle;
  return 0;
}

static int free_errno(int fd, uint32_t handle) {
  struct fakegpu_free f;

  memset(&f, 0, sizeof(f));
  f.handle = handle;
  return kt_ioctl(fd, FAKEGPU_IOCTL_FREE, &f);
}

static struct fakegpu_job job_of(uint32_t op, uint32_t dst, uint64_t length) {
  struct fakegpu_job j;

  memset(&j, 0, sizeof(j));
  j.op = op;
  j.dst_handle = dst;
  j.length = length;
  return j;
}

static int submit(int fd, struct fakegpu_job j, uint64_t* fence) {
  struct fakegpu_submit s;

  memset(&s, 0, sizeof(s));
  s.job = j;
  if (ioctl(fd, FAKEGPU_IOCTL_SUBMIT, &s)) return errno;
  if (fence) *fence = s.fence;
  return 0;
}

static int wait_fence(int fd, uint64_t fence) {
  struct fakegpu_wait w;

  memset(&w, 0, sizeof(w));
  w.fence = fence;
  w.timeout_ns = -1;
  return kt_ioctl(fd, FAKEGPU_IOCTL_WAIT, &w);
}

/* A NOP submitted and waited for: 0, or the first errno. */
static int run_nop(int fd) {
  uint64_t fence = 0;
  int err = submit(fd, job_of(FAKEGPU_OP_NOP, 0, 0), &fence);

  return err ? err : wait_fence(fd, fence);
}

static int reset_errno(int fd) {
  struct fakegpu_reset r;

  memset(&r, 0, sizeof(r));
  return kt_ioctl(fd, FAKEGPU_IOCTL_RESET, &r);
}

/* Writes "MINOR XID [CTX]" to debugfs: 0 or the errno. */
static int inject(unsigned dev, unsigned xid, unsigned ctx) {
  char line[64];
  int fd = open(inject_path, O_WRONLY | O_CLOEXEC), n, err = 0;

  if (fd < 0) return errno;
  n = ctx ? snprintf(line, sizeof(line), "%u %u %u\n", dev, xid, ctx)
          : snprintf(line, sizeof(line), "%u %u\n", dev, xid);
  if (write(fd, line, (size_t)n) != n) err = errno;
  close(fd);
  return err;
}

/* Submits jobs through a freshly mapped ring and rings the doorbell; the last fence. */
static uint64_t ring_submit(int fd, const struct fakegpu_job* jobs, unsigned n) {
  struct fakegpu_info info = info_of(fd);
  struct fakegpu_doorbell db;
  struct fakegpu_sq_ctrl* ctrl;
  struct fakegpu_job* slots;
  void* p =
      mmap(NULL, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, FAKEGPU_MMAP_SQ_OFFSET);
  unsigned i;

  if (p == MAP_FAILED) {
    printf("# mmap ring: %s\n", strerror(errno));
    exit(2);
  }
  ctrl = p;
  slots = (struct fakegpu_job*)((char*)p + FAKEGPU_SQ_ENTRIES_OFFSET);
  for (i = 0; i < n; i++) slots[(ctrl->tail + i) & (info.ring_entries - 1)] = jobs[i];
  __atomic_store_n(&ctrl->tail, ctrl->tail + n, __ATOMIC_RELEASE);
  memset(&db, 0, sizeof(db));
  if (ioctl(fd, FAKEGPU_IOCTL_DOORBELL, &db)) {
    printf("# DOORBELL: %s\n", strerror(errno));
    exit(2);
  }
  munmap(p, info.sq_map_size); /* the ring lives on with the context */
  return db.last_fence;
}

/*
 * Is there a kernel-log record, since the test started, that contains
 * "Xid XID, pid PID (comm), ctx CTX: fakegpuMINOR: WHAT"?  The driver logs
 * before it wakes waiters, but a call that sees the poison without sleeping
 * may run ahead of the line, so look for up to a second.
 */
static bool klog_has(unsigned xid, int pid, const char* who, unsigned ctx, const char* what) {
  char want[256], rec[2048];
  int tries;
  ssize_t n;

  snprintf(want, sizeof(want), "fakegpu: Xid %u, pid %d (%s), ctx %u: fakegpu%u: %s", xid, pid, who,
           ctx, minor, what);
  for (tries = 0; tries < 20; tries++) {
    /* One record per read; EPIPE: some were overwritten, go on. */
    while ((n = read(kmsg, rec, sizeof(rec))) > 0 || (n < 0 && errno == EPIPE)) {
      if (n > 0 && klog_len + (size_t)n < sizeof(klog)) {
        memcpy(klog + klog_len, rec, (size_t)n);
        klog_len += (size_t)n;
        klog[klog_len] = '\0';
      }
    }
    if (strstr(klog, want)) return true;
    usleep(50 * 1000);
  }
  printf("# no kernel-log line containing: %s\n", want);
  return false;
}

static bool own_line(unsigned xid, unsigned ctx, const char* what) {
  return klog_has(xid, getpid(), comm, ctx, what);
}

static void check_poisoned(const char* what, int fd, unsigned xid) {
  struct fakegpu_info info = info_of(fd);
  const struct fakegpu_fence_page* fp;
  char name[160];

  snprintf(name, sizeof(name), "%s: INFO still answers, ctx_xid %u", what, xid);
  kt_true(name, info.ctx_xid == xid, "wrong ctx_xid");
  fp = mmap(NULL, (size_t)page_size, PROT_READ, MAP_SHARED, fd, FAKEGPU_MMAP_FENCE_OFFSET);
  snprintf(name, sizeof(name), "%s: the fence page says xid %u", what, xid);
  kt_true(name, fp != MAP_FAILED && fp->xid == xid, "fence page xid wrong or unmappable");
  if (fp != MAP_FAILED) munmap((void*)fp, (size_t)page_size);
  snprintf(name, sizeof(name), "%s: ALLOC on the poisoned context: EIO", what);
  kt_expect(name, alloc_errno(fd, NULL), EIO);
  snprintf(name, sizeof(name), "%s: SUBMIT on the poisoned context: EIO", what);
  kt_expect(name, submit(fd, job_of(FAKEGPU_OP_NOP, 0, 0), NULL), EIO);
  snprintf(name, sizeof(name), "%s: unknown ioctl still ENOTTY", what);
  kt_expect(name, kt_ioctl(fd, _IOWR(FAKEGPU_IOCTL_BASE, 0x3f, struct fakegpu_info), &info),
            ENOTTY);
}

/* Xid 31: ring jobs naming a freed buffer, then another context's buffer. */
static void test_mmu(void) {
  int a = open_dev(), b = open_dev(), c = open_dev();
  struct fakegpu_job j;
  uint32_t h, hb;
  uint64_t fence;

  kt_expect("mmu: second context allocates", alloc_errno(b, &hb), 0);
  kt_expect("mmu: alloc", alloc_errno(a, &h), 0);
  kt_expect("mmu: free", free_errno(a, h), 0);
  j = job_of(FAKEGPU_OP_FILL, h, 4);
  fence = ring_submit(a, &j, 1);
  kt_expect("mmu: WAIT after a ring job on a freed buffer: EIO", wait_fence(a, fence), EIO);
  kt_true("mmu: kernel log: Xid 31 naming this pid and context",
          own_line(31, info_of(a).ctx_id, "MMU fault: the job at fence"), "no Xid line");
  check_poisoned("mmu (freed)", a, 31);
  kt_expect("mmu: a second context of the device still runs jobs", run_nop(b), 0);

  j = job_of(FAKEGPU_OP_FILL, hb, 4); /* b's handle, which c does not have */
  fence = ring_submit(c, &j, 1);
  kt_expect("mmu: WAIT after a ring job on another context's buffer: EIO", wait_fence(c, fence),
            EIO);
  kt_true("mmu: kernel log: Xid 31 for the foreign buffer",
          own_line(31, info_of(c).ctx_id, "MMU fault"), "no Xid line");
  kt_expect("mmu: the buffer's owner still runs jobs", run_nop(b), 0);
  close(a);
  close(b);
  close(c);
}

/* Xid 8: a job past job_timeout_ms; a shorter one completes. */
static void test_hang(void) {
  int d = open_dev(), err;
  struct timespec t0, t1;
  uint64_t fence = 0;
  double ms;

  err = submit(d, job_of(FAKEGPU_OP_DELAY, 0, (uint64_t)timeout_ms * 100000), &fence);
  kt_expect("hang: a DELAY of a tenth of the timeout completes", err ? err : wait_fence(d, fence),
            0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kt_expect("hang: SUBMIT of a DELAY 100x the timeout",
            submit(d, job_of(FAKEGPU_OP_DELAY, 0, (uint64_t)timeout_ms * 100000000), &fence), 0);
  kt_expect("hang: WAIT for it: EIO once the watchdog fires", wait_fence(d, fence), EIO);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("# hang detected after %.0f ms (job_timeout_ms %u)\n", ms, timeout_ms);
  kt_true("hang: not before job_timeout_ms", ms >= timeout_ms * 0.95, "too early");
  kt_true("hang: kernel log: Xid 8", own_line(8, info_of(d).ctx_id, "GPU stopped processing"),
          "no Xid line");
  check_poisoned("hang", d, 8);
  close(d);
}

/* Xid 13, injected: the next job of every context, or of one. */
static void test_engine(void) {
  int e = open_dev(), f = open_dev(), g, k;
  unsigned eid = info_of(e).ctx_id, fid = info_of(f).ctx_id, gid;

  kt_expect("engine: inject \"MINOR 13\"", inject(minor, 13, 0), 0);
  g = open_dev();
  gid = info_of(g).ctx_id;
  kt_true("engine: nothing happens before a job runs", info_of(e).ctx_xid == 0, "poisoned early");
  kt_expect("engine: first context's next job: EIO", run_nop(e), EIO);
  kt_expect("engine: second context's next job: EIO", run_nop(f), EIO);
  kt_true("engine: kernel log: Xid 13 for both",
          own_line(13, eid, "graphics engine exception at fence 1 (injected)") &&
              own_line(13, fid, "graphics engine exception"),
          "no Xid line");
  check_poisoned("engine", e, 13);
  kt_expect("engine: a context opened after the injection runs jobs", run_nop(g), 0);

  k = open_dev();
  kt_expect("engine: inject \"MINOR 13 CTX\" for one context", inject(minor, 13, gid), 0);
  kt_expect("engine: that context's next job: EIO", run_nop(g), EIO);
  kt_expect("engine: another context of the device runs jobs", run_nop(k), 0);
  kt_true("engine: kernel log: Xid 13 for the one context",
          own_line(13, gid, "graphics engine exception"), "no Xid line");
  close(e);
  close(f);
  close(g);
  close(k);
}

/* Xid 48, injected: contexts holding device memory are poisoned at once. */
static void test_ecc(void) {
  int m = open_dev(), n = open_dev();
  uint32_t h;

  kt_expect("ecc: alloc", alloc_errno(m, &h), 0);
  kt_expect("ecc: inject \"MINOR 48\"", inject(minor, 48, 0), 0);
  kt_true("ecc: kernel log: Xid 48", own_line(48, info_of(m).ctx_id, "double-bit ECC error"),
          "no Xid line");
  check_poisoned("ecc", m, 48);
  kt_expect("ecc: a context without buffers runs jobs", run_nop(n), 0);
  kt_expect("ecc: and may allocate", alloc_errno(n, &h), 0);
  close(m);
  close(n);
}

/* Xid 79, injected: every context of the device fails until RESET. */
static void test_off_bus(void) {
  int n = open_dev(), poisoned = open_dev(), p, other;
  uint64_t fence = 0;
  pid_t child;
  int status;

  kt_expect("off-bus: poison a context first (inject 48 for it)",
            inject(minor, 48, info_of(poisoned).ctx_id), 0);
  /*
   * Most of the timeout: long enough to be asleep in WAIT, not a hang.  The child
   * injects once the parent is blocked in an ioctl (/proc/PID/syscall starts with
   * __NR_ioctl, 16), so a loaded host cannot make it inject after the job is done.
   */
  kt_expect("off-bus: a long DELAY runs",
            submit(n, job_of(FAKEGPU_OP_DELAY, 0, (uint64_t)timeout_ms * 900000), &fence), 0);
  child = fork();
  if (child == 0) {
    char path[64], sc[128];
    int i, w;
    ssize_t got;

    snprintf(path, sizeof(path), "/proc/%d/syscall", (int)getppid());
    for (i = 0; i < 1000; i++) {
      w = open(path, O_RDONLY | O_CLOEXEC);
      got = w >= 0 ? read(w, sc, sizeof(sc) - 1) : -1;
      if (w >= 0) close(w);
      sc[got > 0 ? got : 0] = '\0';
      if (!strncmp(sc, "16 ", 3)) break;
      usleep(2 * 1000);
    }
    usleep(20 * 1000); /* from the syscall's entry to its sleep */
    _exit(inject(minor, 79, 0) ? 1 : 0);
  }
  kt_expect("off-bus: a WAIT asleep when the device is lost wakes: ENODEV", wait_fence(n, fence),
            ENODEV);
  waitpid(child, &status, 0);
  kt_true("off-bus: inject \"MINOR 79\" from another process",
          WIFEXITED(status) && !WEXITSTATUS(status), "inject failed");
  kt_true("off-bus: kernel log: Xid 79, ctx 0, naming the injector",
          klog_has(79, child, comm, 0, "GPU has fallen off the bus"), "no Xid line");
  kt_true("off-bus: INFO answers with device_xid 79", info_of(n).device_xid == 79, "device_xid");
  kt_expect("off-bus: ALLOC: ENODEV", alloc_errno(n, NULL), ENODEV);
  kt_expect("off-bus: SUBMIT: ENODEV", submit(n, job_of(FAKEGPU_OP_NOP, 0, 0), NULL), ENODEV);
  p = open_dev();
  kt_expect("off-bus: a new context opens but fails too: ENODEV", run_nop(p), ENODEV);
  other = open(other_path, O_RDWR | O_CLOEXEC);
  if (other >= 0) {
    kt_expect("off-bus: another device is unaffected", run_nop(other), 0);
    close(other);
  }
  kt_expect("off-bus: RESET (root)", reset_errno(p), 0);
  kt_true("off-bus: device_xid 0 after RESET", info_of(n).device_xid == 0, "still lost");
  kt_expect("off-bus: the old context runs jobs again", run_nop(n), 0);
  kt_expect("off-bus: and the new one", run_nop(p), 0);
  kt_expect("off-bus: a poisoned context stays poisoned after RESET", run_nop(poisoned), EIO);
  close(n);
  close(p);
  close(poisoned);
}

static void test_inject_errors(void) {
  int fd = open_dev();

  kt_expect("inject: an unknown Xid: EINVAL", inject(minor, 99, 0), EINVAL);
  kt_expect("inject: no such device: ENODEV", inject(99, 79, 0), ENODEV);
  kt_expect("inject: no such context: ESRCH", inject(minor, 13, 0x7fffffff), ESRCH);
  kt_expect("inject: 79 for one context: EINVAL", inject(minor, 79, info_of(fd).ctx_id), EINVAL);
  kt_true("inject: errors changed nothing", info_of(fd).ctx_xid == 0 && run_nop(fd) == 0,
          "context affected");
  close(fd);
}

int main(int argc, char** argv) {
  int i, fd;
  ssize_t n;

  setvbuf(stdout, NULL, _IOLBF, 0);
  page_size = sysconf(_SC_PAGESIZE);
  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device"))
      dev_path = argv[i + 1];
    else if (!strcmp(argv[i], "--other"))
      other_path = argv[i + 1];
  }
  fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
  if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = '\0';
  if (fd >= 0) close(fd);
  kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (kmsg < 0) {
    printf("# /dev/kmsg: %s\n", strerror(errno));
    return 2;
  }
  lseek(kmsg, 0, SEEK_END); /* only records from now on */
  fd = open("/sys/module/fakegpu/parameters/job_timeout_ms", O_RDONLY | O_CLOEXEC);
  n = fd >= 0 ? read(fd, klog, 31) : -1;
  if (fd >= 0) close(fd);
  timeout_ms = n > 0 ? (unsigned)atoi(klog) : 0;
  klog[0] = '\0';
  if (timeout_ms < 400) {
    printf("# job_timeout_ms %u: needs at least 400 (the WAIT of test_off_bus)\n", timeout_ms);
    return 2;
  }
  fd = open_dev();
  minor = info_of(fd).device_index;
  close(fd);

  test_mmu();
  test_hang();
  test_engine();
  test_ecc();
  test_off_bus();
  test_inject_errors();
  printf("# %d checks, %d failed\n", kt_checks, kt_failures);
  return kt_failures ? 1 : 0;
}
