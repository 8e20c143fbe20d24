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
 *   write PATH       create/truncate PATH and write to it; prints "ok" or
 *                    "errno=NAME (message)" and exits 0 or 1
 *   crash            die of SIGSEGV (a real fault, which even a PID 1 dies of)
 *   hold SECS ARG    sleep SECS seconds; ARG is only a marker for ps
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mrun-probe: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

/* ---- escape ----------------------------------------------------------- */

static int cmd_escape(int argc, char **argv)
{
	unsigned long long host_dev, host_ino;
	if (argc < 1 || sscanf(argv[0], "%llu:%llu", &host_dev, &host_ino) != 2)
		return fail("usage: escape HOST_ROOT_DEV:HOST_ROOT_INO");

	/* Find a writable directory for the inner chroot dir. */
	static const char *const bases[] = {"/tmp", "/dev/shm", "/", "/root"};
	char inner[64];
	const char *base = NULL;
	snprintf(inner, sizeof inner, "mrun-probe-escape.%d", (int)getpid());
	for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
		if (chdir(bases[i]) == 0 && (mkdir(inner, 0700) == 0 || errno == EEXIST)) {
			base = bases[i];
			break;
		}
	}
	if (!base)
		return fail("escape: no writable directory to chroot into: %s", strerror(errno));

	int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail("escape: open .: %s", strerror(errno));
	if (chroot(inner) < 0)
		return fail("escape: chroot %s/%s: %s (needs CAP_SYS_CHROOT in the container)",
			    base, inner, strerror(errno));
	if (fchdir(fd) < 0)
		return fail("escape: fchdir: %s", strerror(errno));
	close(fd);
	for (int i = 0; i < 1000; i++)
		if (chdir("..") < 0)
			return fail("escape: chdir ..: %s", strerror(errno));
	if (chroot(".") < 0)
		return fail("escape: chroot .: %s", strerror(errno));

	struct stat st;
	if (stat("/", &st) < 0)
		return fail("escape: stat /: %s", strerror(errno));
	int escaped = (unsigned long long)st.st_dev == host_dev &&
		      (unsigned long long)st.st_ino == host_ino;
	printf("root=%llu:%llu host=%llu:%llu escaped=%s\n", (unsigned long long)st.st_dev,
	       (unsigned long long)st.st_ino, host_dev, host_ino, escaped ? "yes" : "no");
	/* Remove the inner dir; from either root, base/inner names it. */
	char inner_path[128];
	snprintf(inner_path, sizeof inner_path, "%s/%s", base, inner);
	rmdir(inner_path);
	return escaped ? 1 : 0;
}

/* ---- ids -------------------------------------------------------------- */

static int cmd_ids(void)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return fail("ids: %s", strerror(errno));
	gid_t groups[256];
	int n = getgroups(256, groups);
	if (n < 0)
		return fail("ids: getgroups: %s", strerror(errno));
	printf("uid=%u euid=%u suid=%u gid=%u egid=%u sgid=%u groups=", ru, eu, su, rg, eg, sg);
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", groups[i]);
	printf("\n");
	return 0;
}

/* ---- sigwait ---------------------------------------------------------- */

static volatile sig_atomic_t last_sig;

static void on_signal(int sig)
{
	last_sig = sig;
}

static const char *signame(int sig)
{
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

static void say(const char *s)
{
	/* write(2), not stdio: the output must appear at once, even on a pipe. */
	size_t len = strlen(s);
	while (len) {
		ssize_t w = write(STDOUT_FILENO, s, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		s += w;
		len -= (size_t)w;
	}
}

static int cmd_sigwait(int argc, char **argv)
{
	long secs = argc >= 1 ? atol(argv[0]) : 30;
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH, SIGQUIT};
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return fail("sigwait: sigaction: %s", strerror(errno));
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
		if (sig == 0)
			continue;
		char line[64];
		snprintf(line, sizeof line, "got %s\n", signame(sig));
		say(line);
		if (sig == SIGTERM)
			return 42;
	}
}

/* ---- procs / zombie --------------------------------------------------- */

/* Calls fn(pid, state, comm) for every process in /proc. */
static int for_each_proc(void (*fn)(int, char, const char *, void *), void *arg)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
		if (!lp || !rp || rp[1] != ' ' || !rp[2])
			continue;
		*rp = 0;
		fn((int)pid, rp[2], lp + 1, arg);
	}
	closedir(d);
	return 0;
}

static void print_proc(int pid, char state, const char *comm, void *arg)
{
	(void)arg;
	printf("%d %c %s\n", pid, state, comm);
}

static int cmd_procs(void)
{
	if (for_each_proc(print_proc, NULL) < 0)
		return fail("procs: /proc: %s", strerror(errno));
	return 0;
}

struct zombie_count {
	int n;
	int print;
};

static void count_zombie(int pid, char state, const char *comm, void *arg)
{
	struct zombie_count *zc = arg;
	if (state == 'Z') {
		zc->n++;
		if (zc->print)
			printf("zombie %d %s\n", pid, comm);
	}
}

static int cmd_zombie(int argc, char **argv)
{
	int n = argc >= 1 ? atoi(argv[0]) : 4;
	for (int i = 0; i < n; i++) {
		pid_t child = fork();
		if (child < 0)
			return fail("zombie: fork: %s", strerror(errno));
		if (child == 0) {
			pid_t grandchild = fork();
			if (grandchild == 0) {
				sleep_ms(100); /* outlive the parent, then exit as an orphan */
				_exit(0);
			}
			_exit(grandchild < 0 ? 1 : 0);
		}
		int status;
		if (waitpid(child, &status, 0) < 0)
			return fail("zombie: waitpid: %s", strerror(errno));
	}
	/* The orphans exit after 100 ms; whoever adopted them has 2 s to reap. */
	struct zombie_count zc = {0, 0};
	sleep_ms(300);
	for (int tries = 0; tries < 20; tries++) {
		zc.n = 0;
		for_each_proc(count_zombie, &zc);
		if (!zc.n)
			break;
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

static int cmd_stat(int argc, char **argv)
{
	if (argc < 1)
		return fail("usage: stat PATH");
	struct stat st;
	if (lstat(argv[0], &st) < 0) {
		printf("errno=%d (%s)\n", errno, strerror(errno));
		return 1;
	}
	char type = S_ISREG(st.st_mode)   ? 'f'
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

static int cmd_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return fail("fds: /proc/self/fd: %s", strerror(errno));
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == self)
			continue;
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

static int cmd_tty(void)
{
	for (int fd = 0; fd < 3; fd++)
		printf("isatty%d=%d\n", fd, isatty(fd));
	const char *name = ttyname(0);
	printf("ttyname=%s\n", name ? name : "none");
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		printf("rows=%u cols=%u\n", ws.ws_row, ws.ws_col);
	else
		printf("winsize=none\n");
	return 0;
}

/* ---- network ---------------------------------------------------------- */

static int cmd_ifaces(void)
{
	struct if_nameindex *ifs = if_nameindex();
	if (!ifs)
		return fail("ifaces: if_nameindex: %s", strerror(errno));
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail("ifaces: socket: %s", strerror(errno));
	for (struct if_nameindex *i = ifs; i->if_index; i++) {
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

static int cmd_loopback(void)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return fail("loopback: socket: %s", strerror(errno));
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t alen = sizeof a;
	if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) < 0) {
		printf("loopback=fail listen: %s\n", strerror(errno));
		return 1;
	}
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0) {
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

/* ---- write / crash / hold --------------------------------------------- */

static int cmd_write(int argc, char **argv)
{
	if (argc < 1)
		return fail("usage: write PATH");
	int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "mrun-probe\n", 11) != 11) {
		int e = errno;
		printf("errno=%s (%s)\n", e == EROFS ? "EROFS" : e == EACCES ? "EACCES"
				       : e == EPERM ? "EPERM" : e == ENOSPC ? "ENOSPC" : "other",
		       strerror(e));
		return 1;
	}
	close(fd);
	printf("ok\n");
	return 0;
}

static int cmd_crash(void)
{
	fflush(stdout);
	volatile int *p = NULL;
	*p = 1;
	return 2;
}

static int cmd_hold(int argc, char **argv)
{
	long secs = argc >= 1 ? atol(argv[0]) : 60;
	sleep_ms(secs * 1000);
	return 0;
}

static void usage(void)
{
	fputs("usage: mrun-probe escape DEV:INO | ids | sigwait [SECS] | zombie [N] | procs |\n"
	      "       stat PATH | fds | tty | ifaces | loopback | write PATH | crash |\n"
	      "       hold SECS [MARKER]\n",
	      stderr);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		usage();
		return 2;
	}
	const char *cmd = argv[1];
	int rest_argc = argc - 2;
	char **rest = argv + 2;
	if (!strcmp(cmd, "escape"))
		return cmd_escape(rest_argc, rest);
	if (!strcmp(cmd, "ids"))
		return cmd_ids();
	if (!strcmp(cmd, "sigwait"))
		return cmd_sigwait(rest_argc, rest);
	if (!strcmp(cmd, "zombie"))
		return cmd_zombie(rest_argc, rest);
	if (!strcmp(cmd, "procs"))
		return cmd_procs();
	if (!strcmp(cmd, "stat"))
		return cmd_stat(rest_argc, rest);
	if (!strcmp(cmd, "fds"))
		return cmd_fds();
	if (!strcmp(cmd, "tty"))
		return cmd_tty();
	if (!strcmp(cmd, "ifaces"))
		return cmd_ifaces();
	if (!strcmp(cmd, "loopback"))
		return cmd_loopback();
	if (!strcmp(cmd, "write"))
		return cmd_write(rest_argc, rest);
	if (!strcmp(cmd, "crash"))
		return cmd_crash();
	if (!strcmp(cmd, "hold"))
		return cmd_hold(rest_argc, rest);
	usage();
	return 2;
}
