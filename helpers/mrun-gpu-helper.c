/* mrun-gpu-helper: the one privileged piece of mrun (see mrun-gpu-helper(8)).
 *
 *   mrun-gpu-helper PID DEVICE [TARGET]           the node grant (gpu_helper_node.c)
 *   mrun-gpu-helper --filter PID DEVICE[:ACCESS]... the filter attach (gpu_helper_attach.c)
 *
 * Installed setuid root. For a rootless container the caller owns (PID: a process in
 * it), and host character devices that the root-owned policy /etc/mrun/gpu-helper.conf
 * allows the caller, it makes a DEVICE usable at TARGET inside the container, or
 * attaches mrun's device cgroup filter to the container's cgroup.
 *
 * This file: main, and the checks both operations share (the policy, the devices, the
 * process). gpu_helper_privs.c makes the process ours (limits, signals, descriptors)
 * and holds the privileges (capabilities, file system ids).
 *
 * Every check is ordered: first what depends only on the caller (input size, our own
 * installation, the policy), then the objects (device, process, target), and only
 * when all passed, the privileged side effect, one system call, last. Each refusal has
 * its own exit status (gpu_helper.h, documented in the man page), and means nothing
 * was done. Libc only. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpu_helper.h"

/* Bounds on what the caller hands a setuid program. Real use is a pid and a few short
 * paths; anything near these is an attack or a bug, refused before any parsing. */
#define MAX_ARGS 36 /* --filter PID and up to 32 devices */
#define MAX_ARG_LEN PATH_MAX
#define MAX_ENV_BYTES (256 * 1024)

void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mrun-gpu-helper: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int status_for(int err, int status) {
  return err == EMFILE || err == ENFILE || err == ENOMEM ? EXIT_LIMITS : status;
}

int clean_dev_path(const char* path) {
  if (strncmp(path, "/dev/", 5) != 0 || path[5] == '\0') return 0;
  const char* p = path + 1;
  while (*p) {
    const char* slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 0;
    p += n + (slash ? 1 : 0);
    if (slash && *p == '\0') return 0; /* trailing slash */
  }
  return 1;
}

int open_beneath(int dirfd, const char* path, unsigned long long resolve) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  /* No O_NOFOLLOW: with O_PATH it would return the trailing symlink itself instead of
   * failing; RESOLVE_NO_SYMLINKS makes any symlink, trailing or not, ELOOP. */
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = resolve;
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

long parse_pid(const char* text) {
  char* end = NULL;
  errno = 0;
  long pid = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || end == text || pid <= 0 || pid > INT_MAX) {
    REFUSE(EXIT_USAGE, "PID \"%s\" is not a process id", text);
  }
  return pid;
}

/* The user database ran out of descriptors or memory: not "no such group". */
static void check_lookup(const char* what) {
  if (status_for(errno, 0) == EXIT_LIMITS) REFUSE(EXIT_LIMITS, "%s: %s", what, strerror(errno));
}

static int group_gid(const char* name, gid_t* gid) {
  errno = 0;
  struct group* gr = getgrnam(name);
  if (gr == NULL) check_lookup("getgrnam");
  if (gr == NULL) return -1;
  *gid = gr->gr_gid;
  return 0;
}

/* The policy, loaded once by the shared loader (src/gpupolicy/gpu_policy_load.h: the
 * file and its directory root's alone, not a symlink, a regular file of at most 64 KiB
 * that parses), with root's file system ids: it is our file, not one the caller names.
 * A policy anyone else could write would let them grant themselves any device. Each
 * refusal keeps its own exit status; the reason is the loader's, which `mrun gpu
 * doctor` prints too. */
const struct policy* helper_policy(void) {
  static struct policy policy;
  static int loaded;
  if (loaded) return &policy;
  char err[512];
  fs_as_root();
  int status = policy_load(MRUN_GPU_HELPER_POLICY, &policy, err, sizeof err);
  fs_as_caller();
  switch (status) {
    case POLICY_LOAD_OK: break;
    case POLICY_LOAD_MALFORMED: REFUSE(EXIT_POLICY_BAD, "%s", err);
    case POLICY_LOAD_LIMITS: REFUSE(EXIT_LIMITS, "%s", err);
    default: REFUSE(EXIT_POLICY_UNSAFE, "%s", err); /* absent, unsafe */
  }
  loaded = 1;
  return &policy;
}

/* The policy: may this real uid (or one of its groups) have DEVICE? Checked before
 * looking at the device, so a caller learns nothing about paths it may not use. Then
 * the device itself, walked as the caller: the path string is opened without following
 * any symlink (one swapped in cannot redirect us to another node), and it must be a
 * character device (a block device would hand out raw storage) owned by root (a
 * system node, not something planted). Returns its device number. */
dev_t check_device(const char* device, const struct caller* c) {
  if (!clean_dev_path(device)) REFUSE(EXIT_USAGE, "DEVICE must be a clean path under /dev/");
  const struct policy* policy = helper_policy();
  static gid_t gids[NGROUPS_MAX + 1];
  int ngids = getgroups(NGROUPS_MAX, gids + 1);
  if (ngids < 0) REFUSE(EXIT_SYSTEM, "getgroups: %s", strerror(errno));
  gids[0] = c->gid;
  fs_as_root(); /* the user database is ours */
  errno = 0;
  struct passwd* pw = getpwuid(c->uid);
  if (pw == NULL) check_lookup("getpwuid");
  struct policy_caller caller = {c->uid, pw ? pw->pw_name : NULL, gids, ngids + 1, group_gid};
  int allowed = policy_allows(policy, device, &caller);
  fs_as_caller();
  if (!allowed) {
    REFUSE(EXIT_NOT_ALLOWED, "%s is not allowed to uid %u by %s", device, (unsigned)c->uid,
           MRUN_GPU_HELPER_POLICY);
  }
  int devfd = open_beneath(AT_FDCWD, device, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (devfd < 0) {
    REFUSE(status_for(errno, EXIT_DEVICE_PATH), "%s: %s%s", device, strerror(errno),
           errno == ELOOP ? " (symlinks are never followed)" : "");
  }
  struct stat st;
  if (fstat(devfd, &st) != 0) REFUSE(EXIT_SYSTEM, "stat %s: %s", device, strerror(errno));
  close(devfd);
  if (S_ISBLK(st.st_mode)) REFUSE(EXIT_BLOCK, "%s is a block device: refused", device);
  if (!S_ISCHR(st.st_mode)) REFUSE(EXIT_NOT_CHAR, "%s is not a character device", device);
  if (st.st_uid != 0) REFUSE(EXIT_DEVICE_PATH, "%s is not owned by root", device);
  return st.st_rdev;
}

/* The real uid in /proc/PID/status (the first number of the "Uid:" line). */
static long status_real_uid(int procfd) {
  char buf[4096];
  int fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* line = strstr(buf, "\nUid:");
  if (line == NULL) return -1;
  return strtol(line + 5, NULL, 10);
}

/* The process, through a pidfd: /proc/PID is opened after the pidfd, and the pidfd
 * still being alive afterwards proves the pid was not recycled in between. From here
 * on everything about it is read through that directory fd, with the caller's file
 * system ids: its namespaces open only if the caller may inspect the process (it is
 * the caller's and dumpable), as they would for the caller. */
void check_process(long pid, const struct caller* c, struct container_process* p) {
  p->pid = pid;
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (pidfd < 0) REFUSE(status_for(errno, EXIT_PROCESS), "process %ld: %s", pid, strerror(errno));
  char proc_path[64];
  snprintf(proc_path, sizeof proc_path, "/proc/%ld", pid);
  p->procfd = open(proc_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (p->procfd < 0) {
    REFUSE(status_for(errno, EXIT_PROCESS), "process %ld: %s", pid, strerror(errno));
  }
  if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0 && errno == ESRCH) {
    REFUSE(EXIT_PROCESS, "process %ld went away", pid);
  }
  close(pidfd);
  /* The process must be the caller's own (its real uid), ... */
  long proc_uid = status_real_uid(p->procfd);
  if (proc_uid < 0 || (uid_t)proc_uid != c->uid) {
    REFUSE(EXIT_PROCESS, "process %ld does not belong to uid %u", pid, (unsigned)c->uid);
  }
  /* ... in a user namespace the caller created (its owner is the real uid, and it is
   * not ours, the initial one: a host process's mounts are the host's), ... */
  p->userns = openat(p->procfd, "ns/user", O_RDONLY | O_CLOEXEC);
  uid_t owner = (uid_t)-1;
  if (p->userns < 0 || ioctl(p->userns, NS_GET_OWNER_UID, &owner) != 0) {
    REFUSE(status_for(errno, EXIT_USERNS), "user namespace of process %ld: %s%s", pid,
           strerror(errno), errno == EACCES ? " (not dumpable: you may not inspect it)" : "");
  }
  struct stat userns_st, own_st;
  if (fstat(p->userns, &userns_st) != 0 || stat("/proc/self/ns/user", &own_st) != 0) {
    REFUSE(EXIT_SYSTEM, "stat user namespaces: %s", strerror(errno));
  }
  if (owner != c->uid || (userns_st.st_ino == own_st.st_ino && userns_st.st_dev == own_st.st_dev)) {
    REFUSE(EXIT_USERNS, "process %ld is not in a user namespace owned by uid %u", pid,
           (unsigned)c->uid);
  }
  /* ... whose mount namespace that user namespace owns: `unshare -U` alone leaves a
   * process in the host's mount namespace, where a mount would reach the host. */
  p->mntns = openat(p->procfd, "ns/mnt", O_RDONLY | O_CLOEXEC);
  int mnt_owner = p->mntns < 0 ? -1 : ioctl(p->mntns, NS_GET_USERNS);
  if (mnt_owner < 0 && errno != EPERM) {
    REFUSE(status_for(errno, EXIT_MNTNS), "mount namespace of process %ld: %s", pid,
           strerror(errno));
  }
  struct stat mnt_owner_st;
  if (mnt_owner < 0 || fstat(mnt_owner, &mnt_owner_st) != 0 ||
      mnt_owner_st.st_ino != userns_st.st_ino || mnt_owner_st.st_dev != userns_st.st_dev) {
    REFUSE(EXIT_MNTNS, "the mount namespace of process %ld is not owned by its user namespace",
           pid);
  }
  close(mnt_owner);
}

int main(int argc, char** argv, char** envp) {
  /* 1. The process made ours, before anything can fail or be killed half-way: signals,
   * descriptors, resource limits (EXIT_LIMITS when a hard limit is too low). */
  sandbox_process();

  /* 2. Bound the input before anything looks at it. */
  if (argc > MAX_ARGS) REFUSE(EXIT_TOO_BIG, "too many arguments (%d)", argc - 1);
  for (int i = 0; i < argc; i++) {
    if (strnlen(argv[i], MAX_ARG_LEN + 1) > MAX_ARG_LEN) {
      REFUSE(EXIT_TOO_BIG, "argument %d longer than %d bytes", i, MAX_ARG_LEN);
    }
  }
  size_t env_bytes = 0;
  for (char** e = envp; *e != NULL; e++) {
    env_bytes += strnlen(*e, MAX_ENV_BYTES + 1) + 1;
    if (env_bytes > MAX_ENV_BYTES) REFUSE(EXIT_TOO_BIG, "environment larger than 256 KiB");
  }
  /* 3. Nothing from the caller's environment reaches libc (locale, NSS, TZ, ...):
   * the helper reads its argv and root-owned files only. */
  if (clearenv() != 0) REFUSE(EXIT_SYSTEM, "clearenv failed");
  umask(077);

  /* 4. Installed right? Without setuid root every later step would fail confusingly. */
  if (geteuid() != 0) {
    REFUSE(EXIT_NOT_SETUID, "not running as root: install me setuid root (mode 4755, owner root)");
  }
  const struct caller caller = {getuid(), getgid()};

  /* 5. Least privilege from here on: only the operation's capabilities permitted, none
   * effective until the system call that needs it; paths walked as the caller. */
  int filter = argc > 1 && strcmp(argv[1], "--filter") == 0;
  privs_init(&caller, filter ? FILTER_CAPS : NODE_CAPS);
  if (chdir("/") != 0) REFUSE(EXIT_SYSTEM, "chdir /: %s", strerror(errno));

  /* 6. The operation. Each checks what depends only on the caller (arguments, the
   * policy), then the objects (devices, process, cgroup or target), and only when all
   * passed does its one privileged side effect, then drops privilege and reports. */
  return filter ? filter_main(argc, argv, &caller) : node_main(argc, argv, &caller);
}
