/* mrun-gpu-helper --filter PID DEVICE[:ACCESS]...: the filter attach (see
 * mrun-gpu-helper(8)).
 *
 * Attaches mrun's device cgroup filter (BPF_PROG_TYPE_CGROUP_DEVICE) to the
 * container's cgroup v2 leaf, which an unprivileged user cannot (loading the program
 * needs CAP_BPF in the initial user namespace): the default allow-list compiled in from
 * policy/devices.conf plus the named DEVICEs, each one the policy allows the caller.
 * The cgroup must be a directory the caller owns (a delegated leaf) with no device
 * program yet: a filter only takes devices away, but root attaching one to someone
 * else's cgroup (or stacking many) would take them from that someone.
 *
 * Each program is kernel memory root holds for the caller, as long as the cgroup
 * lives: at most max_filters_per_user of the policy per uid. They are counted in the
 * kernel, not in a file of ours: every BPF_PROG_TYPE_CGROUP_DEVICE program named
 * FILTER_PROG_NAME whose creator (bpf_prog_info.created_by_uid, our real uid when we
 * load it) is the caller. The caller cannot load such a program itself, nor detach
 * ours; removing a cgroup frees its program and the count drops. A per-user lock makes
 * count-then-attach atomic, and query-then-attach on one cgroup (only one uid owns it).
 *
 * Capabilities (FILTER_CAPS), each raised around its bpf(2) calls only (see
 * gpu_helper_filter.c): CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON for the load, and
 * CAP_SYS_ADMIN for the count. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpu_helper.h"
#include "gpu_helper_filter.h"

#define MAX_FILTER_DEVICES 32

/* The unified hierarchy's path ("0::/PATH" -> "/PATH") in the cgroup file at DIRFD,
 * relative to the root of our cgroup namespace; 0, or -1. */
static int unified_path(int dirfd, const char* file, char* path, size_t pathlen) {
  char text[4096];
  int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  char* line = strncmp(text, "0::", 3) == 0 ? text : strstr(text, "\n0::");
  if (line == NULL) return -1;
  line += line[0] == '\n' ? 4 : 3;
  char* nl = strchr(line, '\n');
  if (nl != NULL) *nl = '\0';
  if (line[0] != '/' || strlen(line) >= pathlen) return -1;
  snprintf(path, pathlen, "%s", line);
  return 0;
}

static int open_beneath_dir(int rootfd, const char* path) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return (int)syscall(SYS_openat2, rootfd, path[1] ? path + 1 : ".", &how, sizeof how);
}

/* The cgroup v2 directory of process P, opened (as the caller) under the cgroup2 mount
 * without following any symlink or leaving that mount, and checked to be owned by the
 * caller (a subtree delegated to it) and not the root. /proc/PID/cgroup names it
 * relative to our cgroup namespace; the mount shows the tree from its mounter's. They
 * line up when our own cgroup, found the same way, holds us (checked). */
static int open_process_cgroup(const struct container_process* p, uid_t ruid, char* path,
                               size_t pathlen) {
  int rootfd = -1;
  static const char* const mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  for (unsigned i = 0; i < 2 && rootfd < 0; i++) {
    struct statfs fs;
    rootfd = open(mounts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rootfd >= 0 && (fstatfs(rootfd, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC)) {
      close(rootfd);
      rootfd = -1;
    }
  }
  if (rootfd < 0) REFUSE(EXIT_CGROUP, "no cgroup2 filesystem at /sys/fs/cgroup");
  char own[PATH_MAX];
  int ownfd = unified_path(AT_FDCWD, "/proc/self/cgroup", own, sizeof own) == 0
                  ? open_beneath_dir(rootfd, own)
                  : -1;
  int procs = ownfd < 0 ? -1 : openat(ownfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
  static char list[65536];
  ssize_t n = procs < 0 ? -1 : read(procs, list, sizeof list - 1);
  char me[32];
  snprintf(me, sizeof me, "%d", (int)getpid());
  int found = 0;
  if (n > 0) {
    list[n] = '\0';
    for (char* tok = strtok(list, "\n"); tok != NULL && !found; tok = strtok(NULL, "\n")) {
      found = strcmp(tok, me) == 0;
    }
  }
  if (!found) REFUSE(EXIT_CGROUP, "our cgroup namespace does not match the cgroup2 mount's");
  close(procs);
  close(ownfd);
  if (unified_path(p->procfd, "cgroup", path, pathlen) != 0) {
    REFUSE(EXIT_CGROUP, "process %ld is in no cgroup v2 hierarchy", p->pid);
  }
  if (path[1] == '\0') {
    REFUSE(EXIT_CGROUP, "process %ld is in the root cgroup, which is not yours", p->pid);
  }
  int cgfd = open_beneath_dir(rootfd, path);
  if (cgfd < 0) REFUSE(status_for(errno, EXIT_CGROUP), "cgroup %s: %s", path, strerror(errno));
  close(rootfd);
  struct stat st;
  if (fstat(cgfd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ruid) {
    REFUSE(EXIT_CGROUP, "cgroup %s is not a directory owned by uid %u (delegated to you)", path,
           (unsigned)ruid);
  }
  return cgfd;
}

/* The caller's lock, MRUN_GPU_HELPER_RUN_DIR/filters-UID.lock: root's directory (0700)
 * and file (0600), so no one else can take it; a caller that stops its own helper while
 * it holds the lock blocks only its own. Held until we exit. */
static void lock_user(uid_t uid) {
  const char* dir = MRUN_GPU_HELPER_RUN_DIR;
  fs_as_root();
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "mkdir %s: %s", dir, strerror(errno));
  }
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (dirfd < 0 || fstat(dirfd, &st) != 0 || st.st_uid != 0 || (st.st_mode & 077)) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "%s: must be a directory of root's, mode 0700", dir);
  }
  char name[64];
  snprintf(name, sizeof name, "filters-%u.lock", (unsigned)uid);
  int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "%s/%s: %s", dir, name, strerror(errno));
  }
  close(dirfd);
  fs_as_caller();
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) REFUSE(EXIT_SYSTEM, "lock %s/%s: %s", dir, name, strerror(errno));
  }
}

/* DEVICE[:ACCESS] -> one rule; ACCESS one or more of r, w, m; default rw. */
static void add_rule(const char* arg, const struct caller* c, struct filter_rule* rule) {
  char device[PATH_MAX];
  snprintf(device, sizeof device, "%s", arg);
  unsigned access = 2 | 4;
  char* colon = strchr(device, ':');
  if (colon != NULL) {
    *colon = '\0';
    access = 0;
    for (const char* a = colon + 1; *a; a++) {
      unsigned bit = *a == 'r' ? 2 : *a == 'w' ? 4 : *a == 'm' ? 1 : 0;
      if (bit == 0 || (access & bit)) REFUSE(EXIT_USAGE, "%s: ACCESS must be rwm", arg);
      access |= bit;
    }
    if (access == 0) REFUSE(EXIT_USAGE, "%s: ACCESS must be rwm", arg);
  }
  dev_t rdev = check_device(device, c);
  rule->type = 2; /* character */
  rule->major = major(rdev);
  rule->minor = minor(rdev);
  rule->access = access;
}

int filter_main(int argc, char** argv, const struct caller* c) {
  if (argc < 3) REFUSE(EXIT_USAGE, "usage: mrun-gpu-helper --filter PID DEVICE[:ACCESS]...");
  if (argc - 3 > MAX_FILTER_DEVICES) {
    REFUSE(EXIT_TOO_BIG, "more than %d devices", MAX_FILTER_DEVICES);
  }
  long pid = parse_pid(argv[2]);
  const struct policy* policy = helper_policy(); /* max_filters_per_user, even with no DEVICE */
  const int max = policy->max_filters_per_user;
  if (max == 0) {
    REFUSE(EXIT_FILTER_LIMIT, "--filter is off: max_filters_per_user 0 in %s",
           MRUN_GPU_HELPER_POLICY);
  }
  struct filter_rule rules[FILTER_MAX_RULES];
  int count = filter_default_rules_copy(rules, FILTER_MAX_RULES);
  for (int i = 3; i < argc; i++) {
    if (count >= FILTER_MAX_RULES) REFUSE(EXIT_TOO_BIG, "more than %d rules", FILTER_MAX_RULES);
    add_rule(argv[i], c, &rules[count++]);
  }
  struct container_process proc;
  check_process(pid, c, &proc);
  close(proc.userns);
  close(proc.mntns);
  char path[PATH_MAX];
  int cgfd = open_process_cgroup(&proc, c->uid, path, sizeof path);

  lock_user(c->uid);
  const char* step = "";
  int attached = filter_attached_count(cgfd);
  if (attached < 0) {
    REFUSE(status_for(errno, EXIT_BPF), "BPF_PROG_QUERY on cgroup %s: %s", path, strerror(errno));
  }
  if (attached > 0) {
    REFUSE(EXIT_ATTACHED, "cgroup %s already has a device filter (%d program%s)", path, attached,
           attached == 1 ? "" : "s");
  }
  int held = filter_count_created_by(c->uid, &step);
  if (held < 0) {
    REFUSE(status_for(errno, EXIT_BPF), "%s, counting uid %u's device filters: %s", step,
           (unsigned)c->uid, strerror(errno));
  }
  if (held >= max) {
    REFUSE(EXIT_FILTER_LIMIT,
           "uid %u holds %d device filter%s already, the most max_filters_per_user allows (%d, "
           "%s): remove the cgroup of a container you no longer run",
           (unsigned)c->uid, held, held == 1 ? "" : "s", max, MRUN_GPU_HELPER_POLICY);
  }
  static char log[16384];
  if (filter_attach(cgfd, rules, count, &step, log, sizeof log) != 0) {
    int err = errno;
    char* last = strrchr(log, '\n');
    while (last != NULL && last > log && last[1] == '\0') {
      *last = '\0';
      last = strrchr(log, '\n');
    }
    REFUSE(status_for(err, EXIT_BPF), "%s on cgroup %s: %s%s%s", step, path, strerror(err),
           log[0] ? ": " : "", last != NULL ? last + 1 : log);
  }
  report_done("device filter (%d rules) attached to cgroup %s of process %ld (uid %u: %d of %d)",
              count, path, pid, (unsigned)c->uid, held + 1, max);
}
