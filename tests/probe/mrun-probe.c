/* mrun-probe: a small static program the integration tests copy into a test
 * rootfs and run inside containers, for the checks busybox cannot do.
 *
 * Every subcommand prints plain "key=value" or one-item-per-line text that the
 * pytest suite parses, and exits 0 on success. Exit 2 always means the probe
 * itself could not do its job (bad usage or an unexpected syscall failure), so
 * a test never mistakes a broken probe for a passing check.
 *
 *   escape DEV:INO   classic chroot escape; exit 0 if "/" afterwards is not the
 *                    host root (DEV:INO as os.stat('/') gives them), 1 if it is
 *   ids              real/effective/saved uid and gid, supplementary groups
 *   sigwait [SECS]   handle TERM INT HUP USR1 USR2 WINCH QUIT, print "ready",
 *                    print "got SIGxxx" per signal; exit 42 on SIGTERM,
 *                    3 after SECS (default 30) without one
 *   zombie [N]       make N (default 4) orphaned grandchildren that exit, wait
 *                    up to 2 s for them to be reaped; exit 0 if no zombie is
 *                    left in /proc, 1 if some are (they are listed)
 *   procs            one line per process in /proc: "PID STATE COMM"
 *   stat PATH        lstat PATH: "dev=D ino=I mode=0OOOO type=T uid=U gid=G
 *                    rdev=MAJ:MIN size=S"
 *   fds              one line per open fd (except the one reading the list):
 *                    "FD -> TARGET"
 *   tty              isatty of 0/1/2, ttyname(0), window size of fd 0
 *   ifaces           one line per network interface: "NAME up|down [loopback]"
 *   loopback         TCP echo over 127.0.0.1 inside the container; exit 0 if it works
 *   ping ADDR        one ICMP echo to the IPv4 ADDR through an unprivileged ICMP socket
 *                    (what iputils' ping uses without CAP_NET_RAW): "ping=ok" or
 *                    "ping=fail REASON"; exit 0 if the reply came
 *   write PATH       create/truncate PATH and write to it; prints "ok" or
 *                    "errno=NAME (message)" and exits 0 or 1
 *   mknod PATH       mknod a character device 1:3 (like /dev/null) at PATH;
 *                    prints "ok" or "errno=NAME (message)" and exits 0 or 1
 *   crash            die of SIGSEGV (a real fault, which even a PID 1 dies of)
 *   hold SECS ARG    sleep SECS seconds; ARG is only a marker for ps
 *   abstract NAME SECS  listen on the abstract unix socket @NAME for SECS seconds
 *   escape-suite HOST_PID HANDLE_PATH [NAME...]
 *                    try each way out of the container (all, or the NAMEs) and
 *                    print one line per attempt: "NAME errno=EPERM" when it was
 *                    refused, "NAME empty" when a read got nothing (a masked
 *                    file), "NAME ok" when it worked, "NAME skip REASON" when
 *                    it cannot be tried here; exit 0 if none worked, 1 if
 *                    some did. HOST_PID: a pid that exists only outside the
 *                    container (for ptrace); HANDLE_PATH: a directory whose
 *                    file handle open_by_handle_at tries to reopen. Attempts
 *                    that change the process (unshare, personality, int 0x80)
 *                    run in a child. Nothing is ever written to the kernel:
 *                    the sysctl and sysrq attempts stop at open(O_WRONLY).
 *   escape-list      the names escape-suite knows, one per line
 *   sys [trap] NAME [PATH]
 *                    make one syscall and print its result, "rc=N" or
 *                    "errno=NAME": getppid, getpgid (of 0), mkdirat PATH (mode
 *                    0755, from the cwd); exit 0. With "trap" first, SIGSYS
 *                    is caught (SCMP_ACT_TRAP) and "sigsys syscall=NR" printed
 *                    before the result
 *   inject PID       the --init attack: open /proc/PID/mem for writing, then
 *                    PTRACE_SEIZE PID and, if that works, make it run
 *                    unshare(CLONE_NEWUSER) by rewinding it onto the syscall
 *                    instruction it is blocked in (x86-64); prints "mem=ok" or
 *                    "mem errno=NAME", "seize=ok" or "seize errno=NAME", and
 *                    "injected=0" (the syscall worked in PID) or
 *                    "injected errno=NAME"; exit 0
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mrun-probe: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/* ---- escape ----------------------------------------------------------- */

static int cmd_escape(int argc, char** argv) {
  unsigned long long host_dev, host_ino;
  if (argc < 1 || sscanf(argv[0], "%llu:%llu", &host_dev, &host_ino) != 2)
    return fail("usage: escape HOST_ROOT_DEV:HOST_ROOT_INO");

  /* Find a writable directory for the inner chroot dir. */
  static const char* const bases[] = {"/tmp", "/dev/shm", "/", "/root"};
  char inner[64];
  const char* base = NULL;
  snprintf(inner, sizeof inner, "mrun-probe-escape.%d", (int)getpid());
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
    if (chdir(bases[i]) == 0 && (mkdir(inner, 0700) == 0 || errno == EEXIST)) {
      base = bases[i];
      break;
    }
  }
  if (!base) return fail("escape: no writable directory to chroot into: %s", strerror(errno));

  int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail("escape: open .: %s", strerror(errno));
  if (chroot(inner) < 0)
    return fail("escape: chroot %s/%s: %s (needs CAP_SYS_CHROOT in the container)", base, inner,
                strerror(errno));
  if (fchdir(fd) < 0) return fail("escape: fchdir: %s", strerror(errno));
  close(fd);
  for (int i = 0; i < 1000; i++)
    if (chdir("..") < 0) return fail("escape: chdir ..: %s", strerror(errno));
  if (chroot(".") < 0) return fail("escape: chroot .: %s", strerror(errno));

  struct stat st;
  if (stat("/", &st) < 0) return fail("escape: stat /: %s", strerror(errno));
  int escaped =
      (unsigned long long)st.st_dev == host_dev && (unsigned long long)st.st_ino == host_ino;
  printf("root=%llu:%llu host=%llu:%llu escaped=%s\n", (unsigned long long)st.st_dev,
         (unsigned long long)st.st_ino, host_dev, host_ino, escaped ? "yes" : "no");
  /* Remove the inner dir; from either root, base/inner names it. */
  char inner_path[128];
  snprintf(inner_path, sizeof inner_path, "%s/%s", base, inner);
  rmdir(inner_path);
  return escaped ? 1 : 0;
}

/* ---- ids -------------------------------------------------------------- */

static int cmd_ids(void) {
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
    return fail("ids: %s", strerror(errno));
  gid_t groups[256];
  int n = getgroups(256, groups);
  if (n < 0) return fail("ids: getgroups: %s", strerror(errno));
  printf("uid=%u euid=%u suid=%u gid=%u egid=%u sgid=%u groups=", ru, eu, su, rg, eg, sg);
  for (int i = 0; i < n; i++) printf("%s%u", i ? "," : "", groups[i]);
  printf("\n");
  return 0;
}

/* ---- sigwait ---------------------------------------------------------- */

static volatile sig_atomic_t last_sig;

static void on_signal(int sig) {
  last_sig = sig;
}

static const char* signame(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGWINCH: return "SIGWINCH";
    case SIGQUIT: return "SIGQUIT";
    default: return "SIG?";
  }
}

static void say(const char* s) {
  /* write(2), not stdio: the output must appear at once, even on a pipe. */
  size_t len = strlen(s);
  while (len) {
    ssize_t w = write(STDOUT_FILENO, s, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    s += w;
    len -= (size_t)w;
  }
}

static int cmd_sigwait(int argc, char** argv) {
  long secs = argc >= 1 ? atol(argv[0]) : 30;
  static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH, SIGQUIT};
  sigset_t block, old;
  sigemptyset(&block);
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sigs[i], &sa, NULL) < 0) return fail("sigwait: sigaction: %s", strerror(errno));
    sigaddset(&block, sigs[i]);
  }
  sigaddset(&block, SIGALRM);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGALRM, &sa, NULL);
  sigprocmask(SIG_BLOCK, &block, &old);
  alarm((unsigned)secs);
  say("ready\n");
  for (;;) {
    last_sig = 0;
    sigsuspend(&old);
    int sig = last_sig;
    if (sig == SIGALRM) {
      say("timeout\n");
      return 3;
    }
    if (sig == 0) continue;
    char line[64];
    snprintf(line, sizeof line, "got %s\n", signame(sig));
    say(line);
    if (sig == SIGTERM) return 42;
  }
}

/* ---- procs / zombie --------------------------------------------------- */

/* Calls fn(pid, state, comm) for every process in /proc. */
static int for_each_proc(void (*fn)(int, char, const char*, void*), void* arg) {
  DIR* d = opendir("/proc");
  if (!d) return -1;
  struct dirent* e;
  while ((e = readdir(d))) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp[1] != ' ' || !rp[2]) continue;
    *rp = 0;
    fn((int)pid, rp[2], lp + 1, arg);
  }
  closedir(d);
  return 0;
}

static void print_proc(int pid, char state, const char* comm, void* arg) {
  (void)arg;
  printf("%d %c %s\n", pid, state, comm);
}

static int cmd_procs(void) {
  if (for_each_proc(print_proc, NULL) < 0) return fail("procs: /proc: %s", strerror(errno));
  return 0;
}

struct zombie_count {
  int n;
  int print;
};

static void count_zombie(int pid, char state, const char* comm, void* arg) {
  struct zombie_count* zc = arg;
  if (state == 'Z') {
    zc->n++;
    if (zc->print) printf("zombie %d %s\n", pid, comm);
  }
}

static int cmd_zombie(int argc, char** argv) {
  int n = argc >= 1 ? atoi(argv[0]) : 4;
  for (int i = 0; i < n; i++) {
    pid_t child = fork();
    if (child < 0) return fail("zombie: fork: %s", strerror(errno));
    if (child == 0) {
      pid_t grandchild = fork();
      if (grandchild == 0) {
        sleep_ms(100); /* outlive the parent, then exit as an orphan */
        _exit(0);
      }
      _exit(grandchild < 0 ? 1 : 0);
    }
    int status;
    if (waitpid(child, &status, 0) < 0) return fail("zombie: waitpid: %s", strerror(errno));
  }
  /* The orphans exit after 100 ms; whoever adopted them has 2 s to reap. */
  struct zombie_count zc = {0, 0};
  sleep_ms(300);
  for (int tries = 0; tries < 20; tries++) {
    zc.n = 0;
    for_each_proc(count_zombie, &zc);
    if (!zc.n) break;
    sleep_ms(100);
  }
  if (zc.n) {
    zc.n = 0;
    zc.print = 1;
    for_each_proc(count_zombie, &zc);
  }
  printf("orphans=%d zombies_left=%d\n", n, zc.n);
  return zc.n ? 1 : 0;
}

/* ---- stat / fds / tty ------------------------------------------------- */

static int cmd_stat(int argc, char** argv) {
  if (argc < 1) return fail("usage: stat PATH");
  struct stat st;
  if (lstat(argv[0], &st) < 0) {
    printf("errno=%d (%s)\n", errno, strerror(errno));
    return 1;
  }
  char type = S_ISREG(st.st_mode)    ? 'f'
              : S_ISDIR(st.st_mode)  ? 'd'
              : S_ISLNK(st.st_mode)  ? 'l'
              : S_ISCHR(st.st_mode)  ? 'c'
              : S_ISBLK(st.st_mode)  ? 'b'
              : S_ISFIFO(st.st_mode) ? 'p'
              : S_ISSOCK(st.st_mode) ? 's'
                                     : '?';
  printf("dev=%llu ino=%llu mode=0%o type=%c uid=%u gid=%u rdev=%u:%u size=%lld\n",
         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
         (unsigned)(st.st_mode & 07777), type, st.st_uid, st.st_gid, major(st.st_rdev),
         minor(st.st_rdev), (long long)st.st_size);
  return 0;
}

static int cmd_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return fail("fds: /proc/self/fd: %s", strerror(errno));
  int self = dirfd(d);
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == self) continue;
    char path[64], target[4096];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0)
      snprintf(target, sizeof target, "?(%s)", strerror(errno));
    else
      target[n] = 0;
    printf("%d -> %s\n", fd, target);
  }
  closedir(d);
  return 0;
}

static int cmd_tty(void) {
  for (int fd = 0; fd < 3; fd++) printf("isatty%d=%d\n", fd, isatty(fd));
  const char* name = ttyname(0);
  printf("ttyname=%s\n", name ? name : "none");
  struct winsize ws;
  if (ioctl(0, TIOCGWINSZ, &ws) == 0)
    printf("rows=%u cols=%u\n", ws.ws_row, ws.ws_col);
  else
    printf("winsize=none\n");
  return 0;
}

/* ---- network ---------------------------------------------------------- */

static int cmd_ifaces(void) {
  struct if_nameindex* ifs = if_nameindex();
  if (!ifs) return fail("ifaces: if_nameindex: %s", strerror(errno));
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail("ifaces: socket: %s", strerror(errno));
  for (struct if_nameindex* i = ifs; i->if_index; i++) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", i->if_name);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
      return fail("ifaces: SIOCGIFFLAGS %s: %s", i->if_name, strerror(errno));
    printf("%s %s%s\n", i->if_name, (ifr.ifr_flags & IFF_UP) ? "up" : "down",
           (ifr.ifr_flags & IFF_LOOPBACK) ? " loopback" : "");
  }
  close(s);
  if_freenameindex(ifs);
  return 0;
}

static int cmd_loopback(void) {
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) return fail("loopback: socket: %s", strerror(errno));
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (bind(l, (struct sockaddr*)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
      getsockname(l, (struct sockaddr*)&a, &alen) < 0) {
    printf("loopback=fail listen: %s\n", strerror(errno));
    return 1;
  }
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr*)&a, sizeof a) < 0) {
    printf("loopback=fail connect: %s\n", strerror(errno));
    return 1;
  }
  int s = accept(l, NULL, NULL);
  char buf[8] = {0};
  if (s < 0 || write(c, "ping", 4) != 4 || read(s, buf, 4) != 4 || memcmp(buf, "ping", 4)) {
    printf("loopback=fail transfer: %s\n", strerror(errno));
    return 1;
  }
  printf("loopback=ok port=%d\n", ntohs(a.sin_port));
  return 0;
}

/* An echo request through SOCK_DGRAM/IPPROTO_ICMP: allowed where the process's group is
 * in net.ipv4.ping_group_range; the kernel fills in the identifier and checksum. */
static int cmd_ping(int argc, char** argv) {
  if (argc < 1) return fail("usage: ping ADDR");
  struct sockaddr_in to;
  memset(&to, 0, sizeof to);
  to.sin_family = AF_INET;
  if (inet_pton(AF_INET, argv[0], &to.sin_addr) != 1) return fail("ping: bad address %s", argv[0]);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
  if (s < 0) {
    printf("ping=fail socket: %s\n", strerror(errno));
    return 1;
  }
  unsigned char req[16] = {8, 0};  // type 8 (echo request), code 0; the rest the kernel's
  req[7] = 1;                      // sequence 1
  memcpy(req + 8, "mrunping", 8);
  if (sendto(s, req, sizeof req, 0, (struct sockaddr*)&to, sizeof to) < 0) {
    printf("ping=fail send: %s\n", strerror(errno));
    return 1;
  }
  struct timeval tv = {2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  unsigned char reply[64];
  ssize_t n = recv(s, reply, sizeof reply, 0);
  if (n < 8 || reply[0] != 0) {  // type 0: echo reply
    printf("ping=fail %s\n", n < 0 ? strerror(errno) : "no echo reply");
    return 1;
  }
  printf("ping=ok\n");
  close(s);
  return 0;
}

/* ---- write / crash / hold --------------------------------------------- */

static int cmd_write(int argc, char** argv) {
  if (argc < 1) return fail("usage: write PATH");
  int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, "mrun-probe\n", 11) != 11) {
    int e = errno;
    printf("errno=%s (%s)\n",
           e == EROFS    ? "EROFS"
           : e == EACCES ? "EACCES"
           : e == EPERM  ? "EPERM"
           : e == ENOSPC ? "ENOSPC"
                         : "other",
           strerror(e));
    return 1;
  }
  close(fd);
  printf("ok\n");
  return 0;
}

static int cmd_mknod(int argc, char** argv) {
  if (argc < 1) return fail("usage: mknod PATH");
  if (mknod(argv[0], S_IFCHR | 0666, makedev(1, 3)) != 0) {
    int e = errno;
    printf("errno=%s (%s)\n", e == EPERM ? "EPERM" : e == EEXIST ? "EEXIST" : "other", strerror(e));
    return 1;
  }
  printf("ok\n");
  return 0;
}

static int cmd_crash(void) {
  fflush(stdout);
  volatile int* p = NULL;
  *p = 1;
  return 2;
}

/* A listening socket in the abstract namespace, which belongs to the network namespace:
 * what a container leaves there must never reach the next one. */
static int cmd_abstract(int argc, char** argv) {
  if (argc < 2) return fail("usage: abstract NAME SECS");
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t len = strlen(argv[0]);
  if (len + 1 > sizeof addr.sun_path) return fail("abstract: name too long");
  memcpy(addr.sun_path + 1, argv[0], len); /* sun_path[0] == 0: abstract */
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
  if (sock < 0 || bind(sock, (struct sockaddr*)&addr, size) != 0 || listen(sock, 1) != 0)
    return fail("abstract: @%s: %s", argv[0], strerror(errno));
  printf("listening=@%s\n", argv[0]);
  fflush(stdout);
  sleep_ms(atol(argv[1]) * 1000);
  return 0;
}

static int cmd_hold(int argc, char** argv) {
  long secs = argc >= 1 ? atol(argv[0]) : 60;
  sleep_ms(secs * 1000);
  return 0;
}

/* ---- escape-suite ----------------------------------------------------- */

/* Each attempt returns 0 when the kernel let it through, -errno when refused,
 * or one of these. */
#define ATTEMPT_EMPTY 1000 /* read returned nothing: a masked file */
#define ATTEMPT_SKIP 1001  /* cannot be tried here; skip_reason says why */

static const char* skip_reason = "";
static const char* escape_host_pid = "";
static const char* escape_handle_path = "/";

static int neg_errno(long rc) {
  return rc < 0 ? -errno : 0;
}

/* Runs fn in a child (for attempts that would change or kill the probe) and
 * returns its result, passed back through the exit status. */
static int in_child(int (*fn)(void)) {
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    int r = fn();
    _exit(r == 0 ? 0 : r < 0 ? (-r > 250 ? 250 : -r) : 251);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) return -errno;
  if (WIFSIGNALED(status)) {
    static char reason[64];
    snprintf(reason, sizeof reason, "the attempt died of signal %d", WTERMSIG(status));
    skip_reason = reason;
    return ATTEMPT_SKIP;
  }
  int code = WEXITSTATUS(status);
  return code == 0 ? 0 : code == 251 ? ATTEMPT_SKIP : -code;
}

static int try_keyctl(void) {
  return neg_errno(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1));
}

static int try_add_key(void) {
  return neg_errno(syscall(SYS_add_key, "user", "mrun-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
}

static int try_request_key(void) {
  long rc = syscall(SYS_request_key, "user", "mrun-probe-absent", NULL, 0);
  /* ENOKEY means the call itself went through. */
  return rc < 0 && errno != ENOKEY ? -errno : 0;
}

#if defined(__x86_64__)
/* keyctl through the i386 ABI (int 0x80, syscall 288): a filter that only knows
 * x86_64 numbers would let it through. */
static int keyctl_i386_child(void) {
  long ret;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(288L), "b"(0L), "c"((long)KEY_SPEC_SESSION_KEYRING), "d"(1L)
                   : "memory");
  int r = (int)ret;
  return r < 0 && r > -4096 ? r : 0;
}

static int try_keyctl_i386(void) {
  return in_child(keyctl_i386_child);
}

/* keyctl through the x32 ABI (syscall number | 0x40000000). */
static int keyctl_x32_child(void) {
  return neg_errno(syscall(0x40000000L | 250L, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1));
}

static int try_keyctl_x32(void) {
  return in_child(keyctl_x32_child);
}
#else
static int try_keyctl_i386(void) {
  skip_reason = "not x86_64";
  return ATTEMPT_SKIP;
}

static int try_keyctl_x32(void) {
  skip_reason = "not x86_64";
  return ATTEMPT_SKIP;
}
#endif

static int try_bpf(void) {
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  if (fd >= 0) close((int)fd);
  return neg_errno(fd);
}

static int try_perf_event_open(void) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd >= 0) close((int)fd);
  return neg_errno(fd);
}

/* The "shocker" escape: open a file by its handle, bypassing the mount tree.
 * Take a real handle of HANDLE_PATH (a host directory bind-mounted in) and
 * reopen it through its mount fd. */
static int try_open_by_handle_at(void) {
  struct {
    struct file_handle fh;
    unsigned char data[MAX_HANDLE_SZ];
  } h;
  memset(&h, 0, sizeof h);
  h.fh.handle_bytes = MAX_HANDLE_SZ;
  int mount_id;
  if (name_to_handle_at(AT_FDCWD, escape_handle_path, &h.fh, &mount_id, 0) < 0) {
    /* No handle to be had (the filesystem does not export them): use the
     * classic one, inode 2 (an ext4 root) with generation 0. */
    h.fh.handle_bytes = 8;
    h.fh.handle_type = 1; /* FILEID_INO32_GEN */
    unsigned int ino_gen[2] = {2, 0};
    memcpy(h.fh.f_handle, ino_gen, sizeof ino_gen);
  }
  int mfd = open(escape_handle_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mfd < 0) {
    skip_reason = "cannot open HANDLE_PATH";
    return ATTEMPT_SKIP;
  }
  int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
  int r = neg_errno(fd);
  if (fd >= 0) close(fd);
  close(mfd);
  return r;
}

static int mount_fresh(const char* fstype) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/mrun-probe-%s.%d", fstype, (int)getpid());
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    skip_reason = "no writable /tmp";
    return ATTEMPT_SKIP;
  }
  int r = neg_errno(mount(fstype, dir, fstype, 0, NULL));
  if (r == 0) umount2(dir, MNT_DETACH);
  rmdir(dir);
  return r;
}

/* A fresh proc or sysfs shows what the masks hide (/proc/kcore, ...). */
static int try_mount_proc(void) {
  return mount_fresh("proc");
}

static int try_mount_sysfs(void) {
  return mount_fresh("sysfs");
}

/* Lift a mask to see what it hides: the first masked path this kernel has. */
static int try_umount_mask(void) {
  static const char* const masked[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list",
                                       "/sys/firmware"};
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
    if (access(masked[i], F_OK) == 0) return neg_errno(umount2(masked[i], MNT_DETACH));
  }
  skip_reason = "none of the masked paths exists on this kernel";
  return ATTEMPT_SKIP;
}

static int try_remount_proc_sys(void) {
  return neg_errno(mount(NULL, "/proc/sys", NULL, MS_REMOUNT | MS_BIND, NULL));
}

/* Opening for writing is the gate; nothing is written, not even on the host. */
static int open_for_writing(const char* path) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  close(fd);
  return 0;
}

static int try_sysrq(void) {
  return open_for_writing("/proc/sysrq-trigger");
}

static int try_proc_sys_kernel(void) {
  return open_for_writing("/proc/sys/kernel/core_pattern");
}

static int read_some(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  int e = errno;
  close(fd);
  return n < 0 ? -e : n == 0 ? ATTEMPT_EMPTY : 0;
}

static int try_kcore(void) {
  return read_some("/proc/kcore");
}

/* The host's keys (not namespaced); masked in a container. */
static int try_proc_keys(void) {
  return read_some("/proc/keys");
}

static int unshare_userns_child(void) {
  return neg_errno(unshare(CLONE_NEWUSER));
}

static int try_unshare_userns(void) {
  return in_child(unshare_userns_child);
}

static int try_clone_userns(void) {
  long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
  if (pid == 0) _exit(0);
  if (pid < 0) return -errno;
  waitpid((pid_t)pid, NULL, 0);
  return 0;
}

static int try_clone3_userns(void) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_NEWUSER;
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) _exit(0);
  if (pid < 0) return -errno;
  waitpid((pid_t)pid, NULL, 0);
  return 0;
}

static int try_ptrace(void) {
  long pid = atol(escape_host_pid);
  if (pid <= 0) {
    skip_reason = "no HOST_PID given";
    return ATTEMPT_SKIP;
  }
  /* PTRACE_SEIZE, not ATTACH: if it works (on the host) it must not stop
   * the target; the probe's exit detaches it. */
  long rc = ptrace(PTRACE_SEIZE, (pid_t)pid, NULL, NULL);
  return neg_errno(rc);
}

static int try_init_module(void) {
  static const char image[16];
  return neg_errno(syscall(SYS_init_module, image, sizeof image, ""));
}

static int try_finit_module(void) {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("finit_module: open /proc/self/exe: %s", strerror(errno)), ATTEMPT_SKIP;
  int r = neg_errno(syscall(SYS_finit_module, fd, "", 0));
  close(fd);
  return r;
}

static int try_delete_module(void) {
  return neg_errno(syscall(SYS_delete_module, "mrun_probe_absent", O_NONBLOCK));
}

/* Invalid flags: the kernel checks permission first, then refuses the flags
 * with EINVAL, so even a privileged caller changes nothing. */
static int try_kexec_load(void) {
  return neg_errno(syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0x80000000UL));
}

static int try_kexec_file_load(void) {
  return neg_errno(syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0x80000000UL));
}

static int personality_child(void) {
  return neg_errno(personality(PER_BSD));
}

static int try_personality(void) {
  return in_child(personality_child);
}

static int try_userfaultfd(void) {
  /* UFFD_USER_MODE_ONLY (1): allowed unprivileged even with
   * vm.unprivileged_userfaultfd=0, so only a filter stops it. */
  long fd = syscall(SYS_userfaultfd, O_CLOEXEC | 1);
  if (fd >= 0) close((int)fd);
  return neg_errno(fd);
}

static const struct {
  const char* name;
  int (*fn)(void);
} attempts[] = {
    {"keyctl", try_keyctl},
    {"add_key", try_add_key},
    {"request_key", try_request_key},
    {"keyctl_i386", try_keyctl_i386},
    {"keyctl_x32", try_keyctl_x32},
    {"bpf", try_bpf},
    {"perf_event_open", try_perf_event_open},
    {"open_by_handle_at", try_open_by_handle_at},
    {"mount_proc", try_mount_proc},
    {"mount_sysfs", try_mount_sysfs},
    {"umount_mask", try_umount_mask},
    {"remount_proc_sys", try_remount_proc_sys},
    {"sysrq_trigger", try_sysrq},
    {"proc_sys_kernel", try_proc_sys_kernel},
    {"kcore", try_kcore},
    {"proc_keys", try_proc_keys},
    {"unshare_userns", try_unshare_userns},
    {"clone_userns", try_clone_userns},
    {"clone3_userns", try_clone3_userns},
    {"ptrace_host", try_ptrace},
    {"init_module", try_init_module},
    {"finit_module", try_finit_module},
    {"delete_module", try_delete_module},
    {"kexec_load", try_kexec_load},
    {"kexec_file_load", try_kexec_file_load},
    {"personality", try_personality},
    {"userfaultfd", try_userfaultfd},
};

static int run_attempt(size_t i) {
  skip_reason = "";
  errno = 0;
  int r = attempts[i].fn();
  const char* name = attempts[i].name;
  if (r == 0) {
    printf("%s ok\n", name);
    return 1;
  }
  if (r == ATTEMPT_EMPTY)
    printf("%s empty\n", name);
  else if (r == ATTEMPT_SKIP)
    printf("%s skip %s\n", name, skip_reason);
  else {
    const char* e = strerrorname_np(-r);
    printf("%s errno=%s\n", name, e ? e : "unknown");
  }
  return 0;
}

static int cmd_escape_suite(int argc, char** argv) {
  if (argc < 2) return fail("usage: escape-suite HOST_PID HANDLE_PATH [NAME...]");
  escape_host_pid = argv[0];
  escape_handle_path = argv[1];
  size_t n = sizeof attempts / sizeof attempts[0];
  int worked = 0;
  if (argc == 2) {
    for (size_t i = 0; i < n; i++) worked += run_attempt(i);
    return worked ? 1 : 0;
  }
  for (int a = 2; a < argc; a++) {
    size_t i = 0;
    while (i < n && strcmp(attempts[i].name, argv[a])) i++;
    if (i == n) return fail("escape-suite: unknown attempt %s (see escape-list)", argv[a]);
    worked += run_attempt(i);
  }
  return worked ? 1 : 0;
}

static int cmd_escape_list(void) {
  for (size_t i = 0; i < sizeof attempts / sizeof attempts[0]; i++)
    printf("%s\n", attempts[i].name);
  return 0;
}

static void usage(void) {
  fputs(
      "usage: mrun-probe escape DEV:INO | ids | x32 | sigwait [SECS] | zombie [N] | procs |\n"
      "       stat PATH | fds | tty | ifaces | loopback | write PATH | mknod PATH | crash |\n"
      "       hold SECS [MARKER] | abstract NAME SECS | escape-suite HOST_PID HANDLE_PATH "
      "[NAME...] |\n"
      "       escape-list | sys [trap] getppid|getpgid|mkdirat PATH | ping ADDR\n",
      stderr);
}

/* The reaper attack: code run by PID 1 on the command's behalf. Only the
 * syscall instruction the target is stopped after is used: no code is
 * written, so the probe shows exactly what the target's own filter allows. */
static int cmd_inject(int argc, char** argv) {
  if (argc < 1) return fail("inject: PID missing");
  pid_t pid = (pid_t)atol(argv[0]);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
  int mem = open(path, O_RDWR | O_CLOEXEC);
  if (mem >= 0) {
    printf("mem=ok\n");
    close(mem);
  } else {
    printf("mem errno=%s\n", strerrorname_np(errno));
  }
  if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) != 0) {
    printf("seize errno=%s\n", strerrorname_np(errno));
    return 0;
  }
  printf("seize=ok\n");
#if defined(__x86_64__)
  int status = 0;
  if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) != 0 || waitpid(pid, &status, __WALL) != pid)
    return fail("inject: interrupt %d: %s", (int)pid, strerror(errno));
  struct user_regs_struct saved, regs;
  if (ptrace(PTRACE_GETREGS, pid, NULL, &saved) != 0)
    return fail("inject: getregs: %s", strerror(errno));
  regs = saved;
  regs.rip = saved.rip - 2; /* back onto the "syscall" (0f 05) it is blocked after */
  regs.rax = SYS_unshare;
  regs.orig_rax = (unsigned long long)-1;
  regs.rdi = CLONE_NEWUSER;
  if (ptrace(PTRACE_SETREGS, pid, NULL, &regs) != 0 ||
      ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0 || waitpid(pid, &status, __WALL) != pid ||
      ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0)
    return fail("inject: step %d: %s", (int)pid, strerror(errno));
  long rc = (long)regs.rax;
  if (rc == 0)
    printf("injected=0\n");
  else
    printf("injected errno=%s\n", strerrorname_np((int)-rc));
  /* Back where it was: re-enter the interrupted syscall. */
  saved.rax = saved.orig_rax;
  saved.rip -= 2;
  ptrace(PTRACE_SETREGS, pid, NULL, &saved);
  ptrace(PTRACE_DETACH, pid, NULL, NULL);
#else
  printf("injected skip not x86-64\n");
#endif
  return 0;
}

static volatile sig_atomic_t sigsys_syscall = -1;

static void on_sigsys(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  sigsys_syscall = info->si_syscall;
}

static int cmd_sys(int argc, char** argv) {
  int a = 0;
  if (a < argc && !strcmp(argv[a], "trap")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSYS, &sa, NULL) != 0) return fail("sys: sigaction: %s", strerror(errno));
    a++;
  }
  if (a >= argc) return fail("sys: NAME missing");
  const char* name = argv[a++];
  long rc;
  if (!strcmp(name, "getppid")) {
    rc = syscall(SYS_getppid);
  } else if (!strcmp(name, "getpgid")) {
    rc = syscall(SYS_getpgid, 0);
  } else if (!strcmp(name, "mkdirat")) {
    if (a >= argc) return fail("sys: mkdirat PATH missing");
    rc = syscall(SYS_mkdirat, AT_FDCWD, argv[a], 0755);
  } else {
    return fail("sys: unknown syscall %s (getppid, getpgid, mkdirat)", name);
  }
  int err = errno;
  if (sigsys_syscall >= 0) printf("sigsys syscall=%d\n", (int)sigsys_syscall);
  if (rc >= 0)
    printf("rc=%ld\n", rc);
  else
    printf("errno=%s\n", strerrorname_np(err));
  return 0;
}

/* x32: getpid through the x32 ABI (x86-64 only): "x32=ok" or "x32 errno=NAME". */
static int cmd_x32(void) {
#if defined(__x86_64__)
  long rc = syscall(0x40000000L | SYS_getpid);
  if (rc >= 0)
    printf("x32=ok\n");
  else
    printf("x32 errno=%s\n", strerrorname_np(errno));
#else
  printf("x32 skip not x86-64\n");
#endif
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    usage();
    return 2;
  }
  const char* cmd = argv[1];
  int rest_argc = argc - 2;
  char** rest = argv + 2;
  if (!strcmp(cmd, "escape")) return cmd_escape(rest_argc, rest);
  if (!strcmp(cmd, "ids")) return cmd_ids();
  if (!strcmp(cmd, "x32")) return cmd_x32();
  if (!strcmp(cmd, "sigwait")) return cmd_sigwait(rest_argc, rest);
  if (!strcmp(cmd, "zombie")) return cmd_zombie(rest_argc, rest);
  if (!strcmp(cmd, "procs")) return cmd_procs();
  if (!strcmp(cmd, "stat")) return cmd_stat(rest_argc, rest);
  if (!strcmp(cmd, "fds")) return cmd_fds();
  if (!strcmp(cmd, "tty")) return cmd_tty();
  if (!strcmp(cmd, "ifaces")) return cmd_ifaces();
  if (!strcmp(cmd, "loopback")) return cmd_loopback();
  if (!strcmp(cmd, "ping")) return cmd_ping(rest_argc, rest);
  if (!strcmp(cmd, "write")) return cmd_write(rest_argc, rest);
  if (!strcmp(cmd, "mknod")) return cmd_mknod(rest_argc, rest);
  if (!strcmp(cmd, "crash")) return cmd_crash();
  if (!strcmp(cmd, "hold")) return cmd_hold(rest_argc, rest);
  if (!strcmp(cmd, "abstract")) return cmd_abstract(rest_argc, rest);
  if (!strcmp(cmd, "escape-suite")) return cmd_escape_suite(rest_argc, rest);
  if (!strcmp(cmd, "escape-list")) return cmd_escape_list();
  if (!strcmp(cmd, "inject")) return cmd_inject(rest_argc, rest);
  if (!strcmp(cmd, "sys")) return cmd_sys(rest_argc, rest);
  usage();
  return 2;
}
