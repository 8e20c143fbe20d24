/* See gpu_policy_load.h. Runs inside a setuid program (with root's file system ids):
 * bounded buffers, no allocation, every descriptor closed on every path. */
#include "gpupolicy/gpu_policy_load.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fills ERR, sets errno to SAVED_ERRNO (0: the object itself was refused), returns
 * STATUS. Called last, after every close, so that errno is the one it names. */
static int refuse(int status, int saved_errno, char* err, size_t errlen, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse(int status, int saved_errno, char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  errno = saved_errno;
  return status;
}

/* Running out of descriptors or memory is the caller's limits (the helper's caller
 * sets them), not a fault of the file: told apart so the helper can say so. */
static int status_of(int e, int otherwise) {
  return e == EMFILE || e == ENFILE || e == ENOMEM ? POLICY_LOAD_LIMITS : otherwise;
}

static int root_only(const struct stat* st) {
  return st->st_uid == 0 && (st->st_mode & 022) == 0;
}

/* The file's own properties, checked on what fstatat saw before opening it (so that a
 * FIFO or a device is never opened) and again on the opened descriptor (what is read). */
static int refuse_symlink(const char* path, char* err, size_t errlen) {
  return refuse(POLICY_LOAD_UNSAFE, 0, err, errlen,
                "%s: a symbolic link: the policy must be a regular file owned by root, not "
                "writable by group or others (put the file itself there)",
                path);
}

static int check_file(const struct stat* st, const char* path, char* err, size_t errlen) {
  if (S_ISLNK(st->st_mode)) return refuse_symlink(path, err, errlen);
  if (!S_ISREG(st->st_mode)) {
    return refuse(POLICY_LOAD_UNSAFE, 0, err, errlen,
                  "%s: not a regular file: the policy must be a regular file owned by root, not "
                  "writable by group or others",
                  path);
  }
  if (!root_only(st)) {
    return refuse(POLICY_LOAD_UNSAFE, 0, err, errlen,
                  "%s: owner uid %u, mode %04o: must be a regular file owned by root, not "
                  "writable by group or others (chown root %s; chmod go-w %s)",
                  path, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777), path, path);
  }
  if (st->st_size > POLICY_MAX_BYTES) {
    return refuse(POLICY_LOAD_MALFORMED, 0, err, errlen,
                  "%s: %lld bytes, larger than 64 KiB (the most a policy may hold)", path,
                  (long long)st->st_size);
  }
  return POLICY_LOAD_OK;
}

/* FD is open on the file: checked again (the name may have been replaced since the
 * fstatat), read, parsed. */
static int read_and_parse(int fd, const char* path, struct policy* out, char* err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return refuse(status_of(errno, POLICY_LOAD_UNSAFE), errno, err, errlen, "stat %s: %s", path,
                  strerror(errno));
  }
  int status = check_file(&st, path, err, errlen);
  if (status != POLICY_LOAD_OK) return status;
  char text[POLICY_MAX_BYTES + 1];
  size_t total = 0;
  while (total < sizeof text) {
    ssize_t n = read(fd, text + total, sizeof text - total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return refuse(status_of(errno, POLICY_LOAD_UNSAFE), errno, err, errlen, "read %s: %s", path,
                    strerror(errno));
    }
    if (n == 0) break;
    total += (size_t)n;
  }
  /* It grew after the fstat: a byte past the bound was read. */
  if (total > POLICY_MAX_BYTES) {
    return refuse(POLICY_LOAD_MALFORMED, 0, err, errlen,
                  "%s: larger than 64 KiB (the most a policy may hold)", path);
  }
  char reason[128];
  int line = policy_parse(text, total, out, reason, sizeof reason);
  if (line != 0)
    return refuse(POLICY_LOAD_MALFORMED, 0, err, errlen, "%s:%d: %s", path, line, reason);
  return POLICY_LOAD_OK;
}

/* DIRFD is the policy's directory: checked, then the file NAME in it. */
static int load_in(int dirfd, const char* dir, const char* name, const char* path,
                   struct policy* out, char* err, size_t errlen) {
  struct stat st;
  if (fstat(dirfd, &st) != 0) {
    return refuse(status_of(errno, POLICY_LOAD_UNSAFE), errno, err, errlen, "stat %s: %s", dir,
                  strerror(errno));
  }
  if (!root_only(&st)) {
    return refuse(POLICY_LOAD_UNSAFE, 0, err, errlen,
                  "%s: owner uid %u, mode %04o: the policy's directory must be owned by root, "
                  "not writable by group or others (chown root %s; chmod go-w %s)",
                  dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), dir, dir);
  }
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int e = errno;
    if (e == ENOENT) {
      return refuse(POLICY_LOAD_ABSENT, e, err, errlen,
                    "%s: %s (no policy: nothing is allowed; root writes one, mode 0644, as "
                    "mrun-gpu-helper(8) shows)",
                    path, strerror(e));
    }
    return refuse(status_of(e, POLICY_LOAD_UNSAFE), e, err, errlen,
                  "%s: %s (no policy: nothing is allowed)", path, strerror(e));
  }
  int status = check_file(&st, path, err, errlen);
  if (status != POLICY_LOAD_OK) return status;
  /* O_NOFOLLOW and O_NONBLOCK: a symlink or a FIFO swapped in since the fstatat is
   * refused (ELOOP) or opened without waiting for a writer, then refused by the check
   * on the descriptor. */
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) return refuse_symlink(path, err, errlen);
    return refuse(e == ENOENT ? POLICY_LOAD_ABSENT : status_of(e, POLICY_LOAD_UNSAFE), e, err,
                  errlen, "%s: %s (no policy: nothing is allowed)", path, strerror(e));
  }
  status = read_and_parse(fd, path, out, err, errlen);
  int saved = errno;
  close(fd);
  errno = saved;
  return status;
}

int policy_load(const char* path, struct policy* out, char* err, size_t errlen) {
  char dir[PATH_MAX];
  const char* slash = strrchr(path, '/');
  size_t dirlen = slash != NULL ? (size_t)(slash - path) : 0;
  if (path[0] != '/' || slash == NULL || slash[1] == '\0' || dirlen >= sizeof dir) {
    return refuse(POLICY_LOAD_UNSAFE, EINVAL, err, errlen,
                  "%s: the policy must be named by an absolute path to a file", path);
  }
  if (dirlen == 0) dirlen = 1; /* "/" */
  memcpy(dir, path, dirlen);
  dir[dirlen] = '\0';
  /* O_NOFOLLOW with O_DIRECTORY: a symlink as the last component is ENOTDIR, not
   * followed; O_PATH: the caller needs no read permission to look at it. */
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) {
    int e = errno;
    if (e == ENOENT) {
      return refuse(POLICY_LOAD_ABSENT, e, err, errlen,
                    "%s: %s (no policy: nothing is allowed; root writes one, mode 0644, as "
                    "mrun-gpu-helper(8) shows)",
                    dir, strerror(e));
    }
    if (e == ENOTDIR || e == ELOOP) {
      return refuse(POLICY_LOAD_UNSAFE, e, err, errlen,
                    "%s: not a directory (a symbolic link?): the policy's directory must be a "
                    "directory owned by root, not writable by group or others",
                    dir);
    }
    return refuse(status_of(e, POLICY_LOAD_UNSAFE), e, err, errlen, "%s: %s", dir, strerror(e));
  }
  int status = load_in(dirfd, dir, slash + 1, path, out, err, errlen);
  int saved = errno;
  close(dirfd);
  errno = saved;
  return status;
}
