/* The helper's own process (see gpu_helper.h), whatever state the caller left in it.
 *
 * A setuid program inherits from an untrusted caller its resource limits, its signal
 * dispositions, mask and interval timers, and its open descriptors. Each can make a
 * step fail or kill us half-way: RLIMIT_NOFILE turns an open(2) into EMFILE,
 * RLIMIT_FSIZE kills us with SIGXFSZ on the report after the grant, a closed pipe with
 * SIGPIPE. So before anything else they are made ours (sandbox_process), within the
 * caller's hard limits: the helper uses no CAP_SYS_RESOURCE, and a hard limit below
 * what it needs is a refusal (EXIT_LIMITS) before anything was done.
 *
 * Then least privilege, as shadow's newuidmap and bubblewrap do: right after the
 * setuid check the permitted set is cut to what the operation needs and nothing is
 * effective; a capability is raised around the one system call that needs it and
 * lowered after it (raw capget/capset: no libcap). And we become the caller: effective
 * uid and file system ids the caller's, only the saved uid root's (it keeps the
 * permitted set). The kernel then judges every path walk, every /proc/PID access
 * (ptrace rules) and the ownership of the caller's user namespaces as the caller's;
 * root's fsuid only for our own files (setfsuid). None of it needs CAP_SETUID or
 * CAP_SETGID: setresuid(2) and setfsuid(2) may always pick among the real, effective
 * and saved ids, which are the caller's and root's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "gpu_helper.h"

/* What the helper needs, with room to spare. Measured (static-pie, x86-64): the node
 * grant works from 10 descriptors (0-2 included; --filter from 8), 2 MiB of address
 * space and data, about 80 KiB of stack (the policy's text, up to 64 KiB, is read onto
 * it: src/gpupolicy/gpu_policy_load.c), a few milliseconds of CPU; it writes one line.
 * The man page lists these. */
#define NEED_FILES 32
#define NEED_FSIZE (1024 * 1024)
#define NEED_MEMORY (64 * 1024 * 1024)
#define NEED_STACK (1024 * 1024)
#define NEED_CPU_SECONDS 2

/* Signals: nothing handled, nothing blocked, and the three a resource can send (a write
 * to a closed pipe, past RLIMIT_FSIZE, past RLIMIT_CPU's soft limit) ignored, so that
 * the call fails with an errno instead of killing us. A signal the caller left pending
 * (blocked, it survives execve(2)) is discarded: each is ignored once first. Interval
 * timers survive execve(2) too: an ITIMER_REAL set by the caller would SIGALRM us
 * mid-way. */
static void reset_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  for (int pass = 0; pass < 2; pass++) {
    for (int sig = 1; sig < NSIG; sig++) {
      if (sig == SIGKILL || sig == SIGSTOP) continue;
      int ignored = pass == 0 || sig == SIGPIPE || sig == SIGXFSZ || sig == SIGXCPU;
      sa.sa_handler = ignored ? SIG_IGN : SIG_DFL;
      sigaction(sig, &sa, NULL); /* EINVAL for the C library's own real-time signals */
    }
  }
  struct itimerval off;
  memset(&off, 0, sizeof off);
  setitimer(ITIMER_REAL, &off, NULL);
  setitimer(ITIMER_VIRTUAL, &off, NULL);
  setitimer(ITIMER_PROF, &off, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* 0, 1 and 2 open (on /dev/null when the caller closed one: else our first open(2)
 * would take its number, and a message meant for stderr would go into that file), and
 * no other inherited descriptor: the ones we open are then all we hold. */
static void sane_descriptors(void) {
  for (int fd = 0; fd < 3; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (open("/dev/null", O_RDWR) != fd) _exit(EXIT_LIMITS); /* not even stderr to say so */
  }
  if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
    struct rlimit rl;
    int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
    for (int fd = 3; fd < max; fd++) close(fd);
  }
}

static unsigned long long shown(rlim_t v) {
  return (unsigned long long)v;
}

/* The soft limit raised to WANT (RLIM_INFINITY: to the hard limit); a hard limit below
 * NEED is a refusal. */
static void need_limit(int resource, const char* name, rlim_t need, rlim_t want, const char* fix) {
  struct rlimit rl;
  if (getrlimit(resource, &rl) != 0) REFUSE(EXIT_LIMITS, "getrlimit %s: %s", name, strerror(errno));
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
    REFUSE(EXIT_LIMITS, "%s: hard limit %llu is below the %llu the helper needs (%s): nothing done",
           name, shown(rl.rlim_max), shown(need), fix);
  }
  if (want == RLIM_INFINITY || (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)) {
    want = rl.rlim_max;
  }
  if (rl.rlim_cur != RLIM_INFINITY && (want == RLIM_INFINITY || rl.rlim_cur < want)) {
    rl.rlim_cur = want;
    if (setrlimit(resource, &rl) != 0) {
      REFUSE(EXIT_LIMITS, "raise the soft %s to %llu: %s", name, shown(want), strerror(errno));
    }
  }
}

void sandbox_process(void) {
  reset_signals();
  /* No core dump of a process holding root's credentials, whatever suid_dumpable says. */
  struct rlimit zero = {0, 0};
  setrlimit(RLIMIT_CORE, &zero);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  /* Room for /dev/null below, if the hard limit allows; refused further down if not. */
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < NEED_FILES &&
      files.rlim_max >= NEED_FILES) {
    files.rlim_cur = NEED_FILES;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  sane_descriptors();
  need_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", NEED_FILES, NEED_FILES, "ulimit -Hn");
  need_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", NEED_FSIZE, RLIM_INFINITY, "ulimit -Hf, in KiB");
  need_limit(RLIMIT_AS, "RLIMIT_AS", NEED_MEMORY, RLIM_INFINITY, "ulimit -Hv, in KiB");
  need_limit(RLIMIT_DATA, "RLIMIT_DATA", NEED_MEMORY, RLIM_INFINITY, "ulimit -Hd, in KiB");
  need_limit(RLIMIT_STACK, "RLIMIT_STACK", NEED_STACK, RLIM_INFINITY, "ulimit -Hs, in KiB");
  /* The node grant forks once: RLIMIT_NPROC counts the caller's processes, so it is
   * checked at the fork (EXIT_LIMITS there). Kernels before 5.11 charge BPF memory to
   * RLIMIT_MEMLOCK. Neither has a minimum we could check here. */
  need_limit(RLIMIT_NPROC, "RLIMIT_NPROC", 0, RLIM_INFINITY, "ulimit -Hu");
  need_limit(RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", 0, RLIM_INFINITY, "ulimit -Hl");
  /* CPU time survives execve(2): the caller may have spent most of its hard limit, the
   * SIGKILL at the hard limit cannot be ignored. */
  struct rusage ru;
  struct rlimit cpu;
  if (getrusage(RUSAGE_SELF, &ru) != 0 || getrlimit(RLIMIT_CPU, &cpu) != 0) {
    REFUSE(EXIT_LIMITS, "getrusage/getrlimit RLIMIT_CPU: %s", strerror(errno));
  }
  rlim_t used = (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1);
  if (cpu.rlim_max != RLIM_INFINITY && cpu.rlim_max < used + NEED_CPU_SECONDS) {
    REFUSE(EXIT_LIMITS,
           "RLIMIT_CPU: %llu of the hard limit of %llu seconds are used, the helper needs %d "
           "more: nothing done",
           shown(used), shown(cpu.rlim_max), NEED_CPU_SECONDS);
  }
  need_limit(RLIMIT_CPU, "RLIMIT_CPU", 0, RLIM_INFINITY, "ulimit -Ht");
}

/* ---- capabilities: raw capget/capset, version 3 (64 bits in two words) ---- */

static struct caller who;
static uint64_t permitted;    /* after privs_init: what the operation needs, no more */
static uint64_t raised;       /* the effective set we asked for */
static int broken;            /* lowering failed: raise nothing any more */
static uint64_t as_sys_admin; /* CAP_BPF, CAP_PERFMON where the kernel lacks them */

static int caps_get(uint64_t* eff, uint64_t* perm) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) != 0) return -1;
  *eff = d[0].effective | (uint64_t)d[1].effective << 32;
  *perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
  return 0;
}

static int caps_set(uint64_t eff, uint64_t perm) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {{(uint32_t)eff, (uint32_t)perm, 0},
                                        {(uint32_t)(eff >> 32), (uint32_t)(perm >> 32), 0}};
  return (int)syscall(SYS_capset, &h, d);
}

static const char* cap_name(uint64_t caps) {
  static const struct {
    int cap;
    const char* name;
  } names[] = {{CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
               {CAP_SYS_CHROOT, "CAP_SYS_CHROOT"},
               {CAP_MKNOD, "CAP_MKNOD"},
               {CAP_NET_ADMIN, "CAP_NET_ADMIN"},
               {CAP_BPF, "CAP_BPF"},
               {CAP_PERFMON, "CAP_PERFMON"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (caps & CAPBIT(names[i].cap)) return names[i].name;
  }
  return "a capability";
}

static uint64_t mapped(uint64_t caps) {
  if (caps & as_sys_admin) caps = (caps & ~as_sys_admin) | CAPBIT(CAP_SYS_ADMIN);
  return caps;
}

void privs_init(const struct caller* c, uint64_t needed) {
  who = *c;
  uint64_t eff, perm;
  if (caps_get(&eff, &perm) != 0) REFUSE(EXIT_SYSTEM, "capget: %s", strerror(errno));
  /* A kernel before 5.8 has no CAP_BPF nor CAP_PERFMON: bpf(2) asks CAP_SYS_ADMIN. */
  as_sys_admin = needed & (CAPBIT(CAP_BPF) | CAPBIT(CAP_PERFMON)) & ~perm;
  needed = mapped(needed);
  if (needed & ~perm) {
    REFUSE(EXIT_NOT_SETUID,
           "started without %s (a reduced capability bounding set?): this operation needs it",
           cap_name(needed & ~perm));
  }
  /* The effective uid the caller's (fsuid follows), the saved one root's: the
   * permitted set stays, since not every uid is non-zero. */
  if (caps_set(0, needed) != 0 || setresuid((uid_t)-1, c->uid, 0) != 0 ||
      caps_get(&eff, &perm) != 0 || eff != 0 || perm != needed) {
    REFUSE(EXIT_SYSTEM, "capset to the operation's capabilities, seteuid %u: %s", (unsigned)c->uid,
           strerror(errno));
  }
  permitted = needed;
  fs_as_caller();
}

void privs_raise(uint64_t caps) {
  caps = mapped(caps);
  if (broken || (caps & ~permitted) || caps_set(caps, permitted) != 0) {
    REFUSE(EXIT_SYSTEM, "raise %s: %s", cap_name(caps), broken ? "capset failed" : strerror(errno));
  }
  raised = caps;
}

/* Never a refusal: it runs right after the one side effect, too. */
void privs_lower(void) {
  int err = errno;
  if (caps_set(0, permitted) != 0 && caps_set(0, 0) != 0) broken = 1;
  raised = 0;
  errno = err;
}

/* setfsuid(2) reports no error: the id is read back. A change of the fsuid from or to
 * 0 also clears or raises the file system capabilities in the effective set, so ours is
 * set again after it. */
static void set_fs_ids(uid_t uid, gid_t gid) {
  setfsuid(uid);
  if (gid != (gid_t)-1) setfsgid(gid);
  if ((uid_t)setfsuid((uid_t)-1) != uid ||
      (gid != (gid_t)-1 && (gid_t)setfsgid((gid_t)-1) != gid)) {
    REFUSE(EXIT_SYSTEM, "setfsuid(%u): refused", (unsigned)uid);
  }
  if (caps_set(raised, permitted) != 0) REFUSE(EXIT_SYSTEM, "capset: %s", strerror(errno));
}

void fs_as_caller(void) {
  set_fs_ids(who.uid, who.gid);
}

/* Root's fsuid (the saved uid's); the fsgid stays the caller's (root's would need
 * CAP_SETGID): what we create is root's with the caller's group, in modes that give
 * the group nothing. */
void fs_as_root(void) {
  set_fs_ids(0, (gid_t)-1);
}

void report_done(const char* fmt, ...) {
  /* setresuid(2) to a non-zero uid clears every capability; and for a root caller the
   * capset does. Failing either changes nothing about what was done. */
  if (setresgid(who.gid, who.gid, who.gid) != 0 || setresuid(who.uid, who.uid, who.uid) != 0) {
    say("warning: could not drop to uid %u before the report", (unsigned)who.uid);
  }
  caps_set(0, 0);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  fflush(stdout); /* EPIPE or EFBIG lose the line: SIGPIPE and SIGXFSZ are ignored */
  exit(EXIT_OK);
}
