/* mrun-gpu-helper PID DEVICE [TARGET]: the node grant (see mrun-gpu-helper(8)).
 *
 * Makes DEVICE usable at TARGET (default: DEVICE's path) inside the container of
 * process PID: a fresh node with DEVICE's major:minor, owned by the caller's real uid
 * and gid, mode 0600, bind-mounted over the existing TARGET in the container's mount
 * namespace.
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
 * Capabilities (NODE_CAPS), each raised around its calls only: CAP_SYS_ADMIN (unshare,
 * mount, open_tree, setns, move_mount), CAP_SYS_CHROOT (setns into a mount namespace
 * asks it too), CAP_MKNOD. Not CAP_CHOWN nor CAP_DAC_OVERRIDE: the tmpfs is mounted
 * owned by the caller and the node made with the caller's file system ids, so it is the
 * caller's from the start. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_helper.h"

/* Sends errno E and, when FD >= 0, FD itself over SOCK. */
static int send_result(int sock, int e, int fd) {
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
  return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

/* Resolves TARGET under the container's root in a child that has become the caller
 * entirely (real, effective and saved ids) and then joined the container's user
 * namespace (USERNS, checked to be the caller's own), and receives the O_PATH fd over
 * a socket. Why: the walk then reaches exactly what the caller could reach from inside
 * its container, nothing more; and a fuse-overlayfs root (mounted in the container's
 * user namespace, allow_other) refuses everyone outside that namespace, root included
 * (fuse_allow_current_process). The child is not dumpable (its ids changed from
 * root's), so the caller cannot ptrace it; killing it only makes us refuse. A fork the
 * caller's RLIMIT_NPROC (or its cgroup's pids.max) refuses is EXIT_LIMITS. */
static int open_target_as_caller(int rootfd, int userns, const char* target, const struct caller* c,
                                 int* err) {
  int sv[2];
  *err = EIO;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "socketpair: %s", strerror(errno));
  }
  pid_t child = fork();
  if (child < 0) {
    REFUSE(errno == EAGAIN ? EXIT_LIMITS : status_for(errno, EXIT_SYSTEM),
           "fork to walk %s as uid %u: %s%s", target, (unsigned)c->uid, strerror(errno),
           errno == EAGAIN ? " (RLIMIT_NPROC or pids.max): nothing done" : "");
  }
  if (child == 0) {
    int e = 0, fd = -1;
    if (setresgid(c->gid, c->gid, c->gid) != 0 || setresuid(c->uid, c->uid, c->uid) != 0 ||
        setns(userns, CLONE_NEWUSER) != 0) {
      e = errno;
    } else {
      fd = open_beneath(rootfd, target,
                        RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
      if (fd < 0) e = errno;
    }
    _exit(send_result(sv[1], e, fd) < 0 ? 1 : 0);
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
  struct cmsghdr* cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
    memcpy(&fd, CMSG_DATA(cm), sizeof fd);
  }
  close(sv[0]);
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) continue;
  if (n != (ssize_t)sizeof e || (fd < 0 && e == 0)) e = EIO;
  *err = e;
  return e == 0 ? fd : -1;
}

/* The node, made in a private mount namespace of our own on a fresh tmpfs (superblock
 * of the initial user namespace: not nodev) that the caller owns, with the caller's
 * file system ids (so the caller owns the node), mode 0600; then cloned as a detached
 * bind mount. The tmpfs disappears with our namespace; the clone keeps the node alive.
 * Returns the clone's fd. Nothing here is visible outside this process. */
static int make_node(dev_t rdev, const struct caller* c) {
  privs_raise(CAPBIT(CAP_SYS_ADMIN));
  if (unshare(CLONE_NEWNS) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "unshare mount namespace: %s", strerror(errno));
  }
  char options[96];
  snprintf(options, sizeof options, "mode=0700,uid=%u,gid=%u,size=16k,nr_inodes=8",
           (unsigned)c->uid, (unsigned)c->gid);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("mrun-gpu-helper", "/tmp", "tmpfs", MS_NOSUID | MS_NOEXEC, options) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "mount a private tmpfs: %s", strerror(errno));
  }
  privs_raise(CAPBIT(CAP_MKNOD));
  if (mknod("/tmp/node", S_IFCHR | 0600, rdev) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "make the node: %s", strerror(errno));
  }
  privs_lower();
  struct stat st;
  if (lstat("/tmp/node", &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != rdev ||
      st.st_uid != c->uid || st.st_gid != c->gid || (st.st_mode & 07777) != 0600) {
    REFUSE(EXIT_SYSTEM, "the node made is not uid %u's, mode 0600", (unsigned)c->uid);
  }
  privs_raise(CAPBIT(CAP_SYS_ADMIN));
  int treefd =
      (int)syscall(SYS_open_tree, AT_FDCWD, "/tmp/node", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (treefd < 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "clone the node's mount: %s", strerror(errno));
  }
  privs_lower();
  return treefd;
}

int node_main(int argc, char** argv, const struct caller* c) {
  if (argc < 3 || argc > 4) REFUSE(EXIT_USAGE, "usage: mrun-gpu-helper PID DEVICE [TARGET]");
  long pid = parse_pid(argv[1]);
  const char* device = argv[2];
  const char* target = argc > 3 ? argv[3] : device;
  if (!clean_dev_path(device)) REFUSE(EXIT_USAGE, "DEVICE must be a clean path under /dev/");
  if (!clean_dev_path(target)) REFUSE(EXIT_TARGET, "TARGET must be a clean path under /dev/");
  dev_t rdev = check_device(device, c);
  struct container_process proc;
  check_process(pid, c, &proc);

  /* The target, resolved as the caller inside the container's root
   * (RESOLVE_IN_ROOT: "/" and ".." stop at it) without following any symlink (the
   * container controls every one there). It must already exist (mrun --device makes it)
   * as a file or node. The fd is kept: a rename afterwards cannot move the mount. */
  int rootfd = openat(proc.procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) {
    REFUSE(status_for(errno, EXIT_PROCESS), "root of process %ld: %s", pid, strerror(errno));
  }
  int target_err = 0;
  int targetfd = open_target_as_caller(rootfd, proc.userns, target, c, &target_err);
  if (targetfd < 0) {
    REFUSE(status_for(target_err, EXIT_TARGET), "%s in the container: %s%s", target,
           strerror(target_err), target_err == ELOOP ? " (symlinks are never followed)" : "");
  }
  close(rootfd);
  close(proc.userns);
  struct stat target_st;
  if (fstat(targetfd, &target_st) != 0 ||
      !(S_ISREG(target_st.st_mode) || S_ISCHR(target_st.st_mode))) {
    REFUSE(EXIT_TARGET, "%s in the container is not a file or a character device", target);
  }

  /* Privileged work, all checks passed: the node, then into the container's mount
   * namespace (the fd checked above), and attach: the one side effect, last. */
  int treefd = make_node(rdev, c);
  privs_raise(CAPBIT(CAP_SYS_ADMIN) | CAPBIT(CAP_SYS_CHROOT));
  if (setns(proc.mntns, CLONE_NEWNS) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "enter the mount namespace of process %ld: %s", pid,
           strerror(errno));
  }
  privs_raise(CAPBIT(CAP_SYS_ADMIN));
  if (syscall(SYS_move_mount, treefd, "", targetfd, "",
              MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    REFUSE(status_for(errno, EXIT_SYSTEM), "mount the node on %s in the container: %s", target,
           strerror(errno));
  }
  report_done("%s (%u:%u) -> %s in process %ld, owner uid %u, mode 0600", device, major(rdev),
              minor(rdev), target, pid, (unsigned)c->uid);
}
