/* mrun-gpu-helper: the one privileged piece of mrun (see mrun-gpu-helper(8)).
 *
 *   mrun-gpu-helper PID DEVICE [TARGET]
 *   mrun-gpu-helper --filter PID DEVICE[:ACCESS]...
 *
 * Installed setuid root. For a rootless container the caller owns (PID: a process in
 * it), and a host character device DEVICE that the root-owned policy
 * /etc/mrun/gpu-helper.conf allows the caller, it makes DEVICE usable at TARGET
 * (default: DEVICE's path) inside the container: a fresh node with DEVICE's
 * major:minor, owned by the caller's real uid, mode 0600, bind-mounted over the
 * existing TARGET in the container's mount namespace.
 *
 * Why a new node and not the host's: a bind mount of the host node keeps its inode,
 * so a root:root 0600 node stays EACCES for the container (its root's capabilities
 * do not reach unmapped inodes). The new node lives on a tmpfs this helper mounts as
 * root in the initial user namespace, so its superblock is not nodev (unlike anything
 * the container can mount) and the caller's uid owns it.
 *
 * Why a bind mount and not an fd passed over a unix socket: programs in the container
 * (fakegpu-client, any GPU library) open /dev/fakegpuN by path; an fd would need a
 * receiver in the container that every program cooperates with. The mount is
 * transparent, and it stays confined to the container's mount namespace, which the
 * caller's user namespace owns, so it cannot propagate back to the host (mounts copied
 * into a less privileged namespace become slaves).
 *
 * --filter: attaches mrun's device cgroup filter (BPF_PROG_TYPE_CGROUP_DEVICE) to the
 * container's cgroup v2 leaf, which an unprivileged user cannot (loading the program
 * needs CAP_BPF in the initial user namespace): the default allow-list compiled in from
 * policy/devices.conf plus the named DEVICEs, each one the policy allows the caller.
 * The cgroup must be a directory the caller owns (a delegated leaf) with no device
 * program yet: a filter only takes devices away, but root attaching one to someone
 * else's cgroup (or stacking many) would take them from that someone.
 *
 * Every check is ordered: first what depends only on the caller (input size, our own
 * installation, the policy), then the objects (device, process, target), and only
 * when all passed, the privileged side effects. Each refusal has its own exit status
 * (EXIT_* below, documented in the man page). Libc only; no allocation. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_helper_filter.h"
#include "gpu_helper_policy.h"

#ifndef MRUN_GPU_HELPER_POLICY
#define MRUN_GPU_HELPER_POLICY "/etc/mrun/gpu-helper.conf"
#endif

enum {
  EXIT_OK = 0,
  EXIT_USAGE = 1,         /* wrong arguments */
  EXIT_TOO_BIG = 2,       /* oversized argv or environment */
  EXIT_NOT_SETUID = 3,    /* effective uid is not 0: not installed setuid root */
  EXIT_POLICY_UNSAFE = 4, /* policy missing, not a root-owned file, or writable by others */
  EXIT_POLICY_BAD = 5,    /* policy malformed */
  EXIT_NOT_ALLOWED = 6,   /* the policy does not allow this device to the caller */
  EXIT_DEVICE_PATH = 7,   /* device missing, a symlink on its path, or not root's */
  EXIT_NOT_CHAR = 8,      /* not a character device */
  EXIT_BLOCK = 9,         /* a block device */
  EXIT_PROCESS = 10,      /* no such process, or not the caller's */
  EXIT_USERNS = 11,       /* its user namespace is not owned by the caller */
  EXIT_MNTNS = 12,        /* its mount namespace is not owned by that user namespace */
  EXIT_TARGET = 13,       /* target refused: outside /dev, symlink, missing, wrong type */
  EXIT_SYSTEM = 14,       /* a system call failed while making the node */
  EXIT_CGROUP = 15,       /* --filter: its cgroup is not a cgroup v2 directory the caller owns */
  EXIT_ATTACHED = 16,     /* --filter: a device program is already attached to that cgroup */
  EXIT_BPF = 17,          /* --filter: a bpf(2) step failed (the message names it) */
};

/* Bounds on what the caller hands a setuid program. Real use is a pid and a few short
 * paths; anything near these is an attack or a bug, refused before any parsing. */
#define MAX_ARGS 36 /* --filter PID and up to 32 devices */
#define MAX_FILTER_DEVICES 32
#define MAX_ARG_LEN PATH_MAX
#define MAX_ENV_BYTES (256 * 1024)
#define MAX_POLICY_BYTES (64 * 1024)

static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mrun-gpu-helper: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

#define REFUSE(status, ...) \
  do {                      \
    say(__VA_ARGS__);       \
    exit(status);           \
  } while (0)

/* A path for DEVICE or TARGET: absolute, under /dev/, no empty, "." or ".." part. */
static int clean_dev_path(const char* path) {
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

static long open_beneath(int dirfd, const char* path, unsigned long long resolve) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  /* No O_NOFOLLOW: with O_PATH it would return the trailing symlink itself instead of
   * failing; RESOLVE_NO_SYMLINKS makes any symlink, trailing or not, ELOOP. */
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = resolve;
  return syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

static int group_gid(const char* name, gid_t* gid) {
  struct group* gr = getgrnam(name);
  if (gr == NULL) return -1;
  *gid = gr->gr_gid;
  return 0;
}

/* Checks the policy file is root's alone, then reads it. A policy anyone else could
 * write would let them grant themselves any device. */
static void load_policy(struct policy* policy) {
  static char text[MAX_POLICY_BYTES + 1];
  struct stat st;
  const char* path = MRUN_GPU_HELPER_POLICY;
  /* Its directory too: whoever can write /etc/mrun can replace the file. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
    REFUSE(EXIT_POLICY_UNSAFE, "%s: must be a directory owned by root, not writable by others",
           dir);
  }
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    REFUSE(EXIT_POLICY_UNSAFE, "%s: %s (no policy: nothing is allowed)", path, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
    REFUSE(EXIT_POLICY_UNSAFE,
           "%s: must be a regular file owned by root, not writable by group or others", path);
  }
  ssize_t total = 0, n;
  while ((n = read(fd, text + total, sizeof text - 1 - (size_t)total)) > 0) total += n;
  if (n < 0) REFUSE(EXIT_POLICY_UNSAFE, "read %s: %s", path, strerror(errno));
  if (total >= MAX_POLICY_BYTES) REFUSE(EXIT_POLICY_BAD, "%s: larger than 64 KiB", path);
  close(fd);
  char err[128];
  int line = policy_parse(text, (size_t)total, policy, err, sizeof err);
  if (line != 0) REFUSE(EXIT_POLICY_BAD, "%s:%d: %s", path, line, err);
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

/* Resolves TARGET under the container's root in a child that has become the caller
 * entirely (real, effective and saved ids) and then joined the container's user
 * namespace (USERNS, checked to be the caller's own), and receives the O_PATH fd over
 * a socket. Why: the walk then reaches exactly what the caller could reach from inside
 * its container, nothing more; and a fuse-overlayfs root (mounted in the container's
 * user namespace, allow_other) refuses everyone outside that namespace, root included
 * (fuse_allow_current_process). The child is not dumpable (its ids changed from
 * root's), so the caller cannot ptrace it; killing it only makes us refuse. */
static int open_target_as_caller(int rootfd, int userns, const char* target, uid_t ruid, gid_t rgid,
                                 int* err) {
  int sv[2];
  *err = EIO;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    int e = 0, fd = -1;
    if (setresgid(rgid, rgid, rgid) != 0 || setresuid(ruid, ruid, ruid) != 0 ||
        setns(userns, CLONE_NEWUSER) != 0) {
      e = errno;
    } else {
      fd = (int)open_beneath(rootfd, target,
                             RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
      if (fd < 0) e = errno;
    }
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {&e, sizeof e};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    _exit(sendmsg(sv[1], &msg, 0) < 0 ? 1 : 0);
  }
  close(sv[1]);
  int e = EIO, fd = -1;
  char control[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {&e, sizeof e};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC);
  struct cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
  }
  close(sv[0]);
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) continue;
  if (n != (ssize_t)sizeof e || (fd < 0 && e == 0)) e = EIO;
  *err = e;
  return e == 0 ? fd : -1;
}

/* A process of the caller's rootless container, held through directory fds. */
struct container_process {
  long pid;
  int procfd; /* /proc/PID, verified against a pidfd */
  int userns; /* its user namespace (owned by the caller, not the initial one) */
  int mntns;  /* its mount namespace (owned by that user namespace) */
};

static long parse_pid(const char* text) {
  char* end = NULL;
  errno = 0;
  long pid = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || end == text || pid <= 0 || pid > INT_MAX) {
    REFUSE(EXIT_USAGE, "PID \"%s\" is not a process id", text);
  }
  return pid;
}

/* The policy (loaded once): may this real uid (or one of its groups) have DEVICE?
 * Checked before looking at the device, so a caller learns nothing about paths it may
 * not use. Then the device itself: the path string is opened without following any
 * symlink (one swapped in cannot redirect us to another node), and it must be a
 * character device (a block device would hand out raw storage) owned by root (a
 * system node, not something planted). Returns its device number. */
static dev_t check_device(const char* device, uid_t ruid, gid_t rgid) {
  static struct policy policy;
  static int loaded;
  if (!clean_dev_path(device)) REFUSE(EXIT_USAGE, "DEVICE must be a clean path under /dev/");
  if (!loaded) {
    load_policy(&policy);
    loaded = 1;
  }
  static gid_t gids[NGROUPS_MAX + 1];
  int ngids = getgroups(NGROUPS_MAX, gids + 1);
  if (ngids < 0) REFUSE(EXIT_SYSTEM, "getgroups: %s", strerror(errno));
  gids[0] = rgid;
  struct passwd* pw = getpwuid(ruid);
  struct policy_caller caller = {ruid, pw ? pw->pw_name : NULL, gids, ngids + 1, group_gid};
  if (!policy_allows(&policy, device, &caller)) {
    REFUSE(EXIT_NOT_ALLOWED, "%s is not allowed to uid %u by %s", device, (unsigned)ruid,
           MRUN_GPU_HELPER_POLICY);
  }
  int devfd = (int)open_beneath(AT_FDCWD, device, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (devfd < 0) {
    REFUSE(EXIT_DEVICE_PATH, "%s: %s%s", device, strerror(errno),
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

/* The process, through a pidfd: /proc/PID is opened after the pidfd, and the pidfd
 * still being alive afterwards proves the pid was not recycled in between. From here
 * on everything about it is read through that directory fd. */
static void check_process(long pid, uid_t ruid, struct container_process* p) {
  p->pid = pid;
  int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (pidfd < 0) REFUSE(EXIT_PROCESS, "process %ld: %s", pid, strerror(errno));
  char proc_path[64];
  snprintf(proc_path, sizeof proc_path, "/proc/%ld", pid);
  p->procfd = open(proc_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (p->procfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0) {
    REFUSE(EXIT_PROCESS, "process %ld went away", pid);
  }
  /* The process must be the caller's own (its real uid), ... */
  long proc_uid = status_real_uid(p->procfd);
  if (proc_uid < 0 || (uid_t)proc_uid != ruid) {
    REFUSE(EXIT_PROCESS, "process %ld does not belong to uid %u", pid, (unsigned)ruid);
  }
  /* ... in a user namespace the caller created (its owner is the real uid, and it is
   * not ours, the initial one: a host process's mounts are the host's), ... */
  p->userns = openat(p->procfd, "ns/user", O_RDONLY | O_CLOEXEC);
  uid_t owner = (uid_t)-1;
  if (p->userns < 0 || ioctl(p->userns, NS_GET_OWNER_UID, &owner) != 0) {
    REFUSE(EXIT_USERNS, "user namespace of process %ld: %s", pid, strerror(errno));
  }
  struct stat userns_st, own_st;
  if (fstat(p->userns, &userns_st) != 0 || stat("/proc/self/ns/user", &own_st) != 0) {
    REFUSE(EXIT_SYSTEM, "stat user namespaces: %s", strerror(errno));
  }
  if (owner != ruid || (userns_st.st_ino == own_st.st_ino && userns_st.st_dev == own_st.st_dev)) {
    REFUSE(EXIT_USERNS, "process %ld is not in a user namespace owned by uid %u", pid,
           (unsigned)ruid);
  }
  /* ... whose mount namespace that user namespace owns: `unshare -U` alone leaves a
   * process in the host's mount namespace, where a mount would reach the host. */
  p->mntns = openat(p->procfd, "ns/mnt", O_RDONLY | O_CLOEXEC);
  int mnt_owner = p->mntns < 0 ? -1 : ioctl(p->mntns, NS_GET_USERNS);
  struct stat mnt_owner_st;
  if (mnt_owner < 0 || fstat(mnt_owner, &mnt_owner_st) != 0 ||
      mnt_owner_st.st_ino != userns_st.st_ino || mnt_owner_st.st_dev != userns_st.st_dev) {
    REFUSE(EXIT_MNTNS, "the mount namespace of process %ld is not owned by its user namespace",
           pid);
  }
}

static void drop_privileges(uid_t ruid, gid_t rgid) {
  if (setresgid(rgid, rgid, rgid) != 0 || setresuid(ruid, ruid, ruid) != 0) {
    REFUSE(EXIT_SYSTEM, "drop privileges: %s", strerror(errno));
  }
}

/* mrun-gpu-helper PID DEVICE [TARGET]: a usable node for DEVICE at TARGET. */
static int node_main(int argc, char** argv, uid_t ruid, gid_t rgid) {
  if (argc < 3 || argc > 4) REFUSE(EXIT_USAGE, "usage: mrun-gpu-helper PID DEVICE [TARGET]");
  long pid = parse_pid(argv[1]);
  const char* device = argv[2];
  const char* target = argc > 3 ? argv[3] : device;
  if (!clean_dev_path(device)) REFUSE(EXIT_USAGE, "DEVICE must be a clean path under /dev/");
  if (!clean_dev_path(target)) REFUSE(EXIT_TARGET, "TARGET must be a clean path under /dev/");
  dev_t rdev = check_device(device, ruid, rgid);
  struct container_process proc;
  check_process(pid, ruid, &proc);

  /* The target, resolved as the caller inside the container's root
   * (RESOLVE_IN_ROOT: "/" and ".." stop at it) without following any symlink (the
   * container controls every one there). It must already exist (mrun --device makes it) as a file
   * or node. The fd is kept: a rename afterwards cannot move the mount elsewhere. */
  int rootfd = openat(proc.procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) REFUSE(EXIT_PROCESS, "root of process %ld: %s", pid, strerror(errno));
  int target_err = 0;
  int targetfd = open_target_as_caller(rootfd, proc.userns, target, ruid, rgid, &target_err);
  if (targetfd < 0) {
    REFUSE(EXIT_TARGET, "%s in the container: %s%s", target, strerror(target_err),
           target_err == ELOOP ? " (symlinks are never followed)" : "");
  }
  struct stat target_st;
  if (fstat(targetfd, &target_st) != 0 ||
      !(S_ISREG(target_st.st_mode) || S_ISCHR(target_st.st_mode))) {
    REFUSE(EXIT_TARGET, "%s in the container is not a file or a character device", target);
  }

  /* Privileged work, all checks passed. The node is made in a private mount
   * namespace of our own on a fresh tmpfs (superblock of the initial user namespace:
   * not nodev), owned by the caller's uid, mode 0600; then cloned as a detached bind
   * mount. The tmpfs disappears with our namespace; the clone keeps the node alive. */
  if (unshare(CLONE_NEWNS) != 0)
    REFUSE(EXIT_SYSTEM, "unshare mount namespace: %s", strerror(errno));
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("mrun-gpu-helper", "/tmp", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0700,size=16k") != 0) {
    REFUSE(EXIT_SYSTEM, "mount a private tmpfs: %s", strerror(errno));
  }
  if (mknod("/tmp/node", S_IFCHR | 0600, rdev) != 0 || chown("/tmp/node", ruid, rgid) != 0 ||
      chmod("/tmp/node", 0600) != 0) {
    REFUSE(EXIT_SYSTEM, "make the node: %s", strerror(errno));
  }
  int treefd =
      (int)syscall(SYS_open_tree, AT_FDCWD, "/tmp/node", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (treefd < 0) REFUSE(EXIT_SYSTEM, "clone the node's mount: %s", strerror(errno));
  /* Into the container's mount namespace (the fd checked above), and attach. */
  if (setns(proc.mntns, CLONE_NEWNS) != 0) {
    REFUSE(EXIT_SYSTEM, "enter the mount namespace of process %ld: %s", pid, strerror(errno));
  }
  if (syscall(SYS_move_mount, treefd, "", targetfd, "",
              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    REFUSE(EXIT_SYSTEM, "mount the node on %s in the container: %s", target, strerror(errno));
  }

  /* Done: drop privilege for good before anything else (the report). */
  drop_privileges(ruid, rgid);
  printf("%s (%u:%u) -> %s in process %ld, owner uid %u, mode 0600\n", device, major(rdev),
         minor(rdev), target, pid, (unsigned)ruid);
  return EXIT_OK;
}

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

/* The cgroup v2 directory of process P, opened under the cgroup2 mount without
 * following any symlink or leaving that mount, and checked to be owned by RUID (a
 * subtree delegated to the caller) and not the root. /proc/PID/cgroup names it
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
  char list[65536];
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
  if (!found) {
    REFUSE(EXIT_CGROUP, "our cgroup namespace does not match the cgroup2 mount's");
  }
  close(procs);
  close(ownfd);
  if (unified_path(p->procfd, "cgroup", path, pathlen) != 0) {
    REFUSE(EXIT_CGROUP, "process %ld is in no cgroup v2 hierarchy", p->pid);
  }
  if (path[1] == '\0') {
    REFUSE(EXIT_CGROUP, "process %ld is in the root cgroup, which is not yours", p->pid);
  }
  int cgfd = open_beneath_dir(rootfd, path);
  if (cgfd < 0) REFUSE(EXIT_CGROUP, "cgroup %s: %s", path, strerror(errno));
  close(rootfd);
  struct stat st;
  if (fstat(cgfd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ruid) {
    REFUSE(EXIT_CGROUP, "cgroup %s is not a directory owned by uid %u (delegated to you)", path,
           (unsigned)ruid);
  }
  return cgfd;
}

/* mrun-gpu-helper --filter PID DEVICE[:ACCESS]...: the device filter on PID's cgroup. */
static int filter_main(int argc, char** argv, uid_t ruid, gid_t rgid) {
  if (argc < 3) REFUSE(EXIT_USAGE, "usage: mrun-gpu-helper --filter PID DEVICE[:ACCESS]...");
  if (argc - 3 > MAX_FILTER_DEVICES)
    REFUSE(EXIT_TOO_BIG, "more than %d devices", MAX_FILTER_DEVICES);
  long pid = parse_pid(argv[2]);
  struct filter_rule rules[FILTER_MAX_RULES];
  int count = filter_default_rules_copy(rules, FILTER_MAX_RULES);
  for (int i = 3; i < argc; i++) {
    /* DEVICE[:ACCESS], ACCESS one or more of r, w, m; default rw. */
    char device[PATH_MAX];
    snprintf(device, sizeof device, "%s", argv[i]);
    unsigned access = 2 | 4;
    char* colon = strchr(device, ':');
    if (colon != NULL) {
      *colon = '\0';
      access = 0;
      for (const char* c = colon + 1; *c; c++) {
        unsigned bit = *c == 'r' ? 2 : *c == 'w' ? 4 : *c == 'm' ? 1 : 0;
        if (bit == 0 || (access & bit)) REFUSE(EXIT_USAGE, "%s: ACCESS must be rwm", argv[i]);
        access |= bit;
      }
      if (access == 0) REFUSE(EXIT_USAGE, "%s: ACCESS must be rwm", argv[i]);
    }
    dev_t rdev = check_device(device, ruid, rgid);
    if (count >= FILTER_MAX_RULES) REFUSE(EXIT_TOO_BIG, "more than %d rules", FILTER_MAX_RULES);
    rules[count].type = 2; /* character */
    rules[count].major = major(rdev);
    rules[count].minor = minor(rdev);
    rules[count].access = access;
    count++;
  }
  struct container_process proc;
  check_process(pid, ruid, &proc);
  char path[PATH_MAX];
  int cgfd = open_process_cgroup(&proc, ruid, path, sizeof path);
  /* One program per cgroup through us: the lock makes query-then-attach atomic against
   * a second helper run on the same cgroup. */
  if (flock(cgfd, LOCK_EX) != 0) REFUSE(EXIT_SYSTEM, "lock cgroup %s: %s", path, strerror(errno));
  int attached = filter_attached_count(cgfd);
  if (attached < 0) REFUSE(EXIT_BPF, "BPF_PROG_QUERY on cgroup %s: %s", path, strerror(errno));
  if (attached > 0) {
    REFUSE(EXIT_ATTACHED, "cgroup %s already has a device filter (%d program%s)", path, attached,
           attached == 1 ? "" : "s");
  }
  const char* step = "";
  static char log[16384];
  if (filter_attach(cgfd, rules, count, &step, log, sizeof log) != 0) {
    int err = errno;
    char* last = strrchr(log, '\n');
    while (last != NULL && last > log && last[1] == '\0') {
      *last = '\0';
      last = strrchr(log, '\n');
    }
    REFUSE(EXIT_BPF, "%s on cgroup %s: %s%s%s", step, path, strerror(err), log[0] ? ": " : "",
           last != NULL ? last + 1 : log);
  }
  drop_privileges(ruid, rgid);
  printf("device filter (%d rules) attached to cgroup %s of process %ld\n", count, path, pid);
  return EXIT_OK;
}

int main(int argc, char** argv, char** envp) {
  /* 1. Bound the input before anything looks at it. */
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
  /* 2. Nothing from the caller's environment reaches libc (locale, NSS, TZ, ...):
   * the helper reads its argv and root-owned files only. */
  if (clearenv() != 0) REFUSE(EXIT_SYSTEM, "clearenv failed");
  umask(077);

  /* 3. Installed right? Without setuid root every later step would fail confusingly. */
  if (geteuid() != 0) {
    REFUSE(EXIT_NOT_SETUID, "not running as root: install me setuid root (mode 4755, owner root)");
  }
  const uid_t ruid = getuid();
  const gid_t rgid = getgid();

  /* 4. The operation. Each checks what depends only on the caller (arguments, the
   * policy), then the objects (devices, process, cgroup or target), and only when all
   * passed does the privileged work, dropping privilege before its report. */
  if (argc > 1 && strcmp(argv[1], "--filter") == 0) return filter_main(argc, argv, ruid, rgid);
  return node_main(argc, argv, ruid, rgid);
}
