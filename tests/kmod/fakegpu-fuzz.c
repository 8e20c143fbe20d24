// SPDX-License-Identifier: MIT
/*
 * fakegpu-fuzz - throw random ioctls, struct bytes, mmaps and ring entries at
 * fakegpu.ko from several processes at once, for a bounded time.
 *
 *   fakegpu-fuzz [--seconds N] [--procs N] [--seed N] NODE...
 *
 * Each process opens and closes the NODEs at random (one open in four
 * O_RDONLY) and, on the fds it holds, issues: the driver's commands with
 * random (often almost valid) structs; its ioctl type with random
 * number/direction/size; arbitrary command numbers (minus the ones the VFS
 * handles itself for any file, which would act on devtmpfs rather than on
 * the driver); argument pointers that are NULL, wild, read-only or valid;
 * mmaps at interesting and random offsets; random ring entries and tails
 * with doorbells; forks that inherit it all; and closes with work in
 * flight.  The kernel must neither oops nor leak: the caller checks dmesg
 * and that the module unloads afterwards.
 *
 * Exits 0 when every child ran to its deadline (whatever the driver
 * answered), 1 if a child died of a signal (a driver bug can make user space
 * crash too, e.g. a bad mapping), 2 on usage errors.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fakegpu.h>

#define MAX_FDS 4
#define MAX_MAPS 16

static uint64_t rng_state;

static uint64_t rnd(void) {
  /* xorshift64*: good enough, and reproducible from --seed. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t below(uint64_t n) {
  return n ? rnd() % n : 0;
}

static double now(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct mapping {
  void* addr;
  size_t len;
  int writable;
};

struct state {
  const char** nodes;
  int nnodes;
  int fds[MAX_FDS];
  struct mapping maps[MAX_MAPS];
  struct fakegpu_sq_ctrl* ring; /* a mapped ring of fds[0], if any */
  uint32_t ring_entries;
  unsigned char* ro_page;
  unsigned long calls;
};

static const unsigned long commands[] = {
    FAKEGPU_IOCTL_INFO,   FAKEGPU_IOCTL_ALLOC, FAKEGPU_IOCTL_FREE,     FAKEGPU_IOCTL_MAP,
    FAKEGPU_IOCTL_SUBMIT, FAKEGPU_IOCTL_WAIT,  FAKEGPU_IOCTL_DOORBELL, FAKEGPU_IOCTL_RESET,
};

/* Small values make random structs land near the valid ones more often. */
static uint64_t interesting(void) {
  static const uint64_t values[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    7,
                                    8,
                                    4095,
                                    4096,
                                    4097,
                                    65536,
                                    1u << 20,
                                    FAKEGPU_MAX_BUFFER_SIZE,
                                    FAKEGPU_MAX_BUFFER_SIZE + 1,
                                    0x7fffffff,
                                    0xffffffff,
                                    0x100000000ULL,
                                    INT64_MAX,
                                    (uint64_t)-1,
                                    (uint64_t)-4096};

  switch (below(3)) {
    case 0: return values[below(sizeof(values) / sizeof(values[0]))];
    case 1: return below(16);
    default: return rnd();
  }
}

static void random_struct(unsigned char* buf, size_t len) {
  size_t i;

  if (below(4) == 0) {
    for (i = 0; i < len; i++) buf[i] = (unsigned char)rnd();
    return;
  }
  /* Mostly zeros (valid reserved fields), a few fields set. */
  memset(buf, 0, len);
  for (i = 0; i + 8 <= len; i += 8)
    if (below(3) == 0) {
      uint64_t v = interesting();

      memcpy(buf + i, &v, 8);
    }
  if (len >= 8 && below(2)) {
    /* A valid op (or one past) in the first word: a job or a size. */
    uint32_t op = (uint32_t)below(FAKEGPU_OP_COUNT + 1);

    memcpy(buf, &op, sizeof(op));
  }
}

/* The ioctl types the VFS itself interprets for any open file (FIFREEZE, FS_IOC_*,
 * FICLONE, FIOCLEX, ...): they would act on devtmpfs, not on the driver. */
static int vfs_type(unsigned int type) {
  return type == 0 || type == 'X' || type == 'f' || type == 0x94 || type == 'T' || type == 0x12;
}

static unsigned long random_command(void) {
  unsigned long cmd;

  switch (below(4)) {
    case 0:
    case 1: return commands[below(sizeof(commands) / sizeof(commands[0]))];
    case 2: return _IOC(below(4), FAKEGPU_IOCTL_BASE, below(32), below(256));
    default:
      do cmd = (unsigned long)(uint32_t)rnd();
      while (vfs_type(_IOC_TYPE(cmd)));
      return cmd;
  }
}

static void do_ioctl(struct state* s, int fd) {
  /* 256 spare bytes: arguments may start near the end of the struct area. */
  static unsigned char buf[512 + 256] __attribute__((aligned(64)));
  unsigned long cmd = random_command();
  void* arg = buf;

  random_struct(buf, 512);
  if (cmd == FAKEGPU_IOCTL_WAIT) {
    struct fakegpu_wait* w = (struct fakegpu_wait*)buf;

    /* Bounded: a fence that was issued always completes, but not instantly. */
    if (w->timeout_ns < 0 || w->timeout_ns > 100000000) w->timeout_ns = (int64_t)below(100000000);
  }
  switch (below(20)) {
    case 0: arg = NULL; break;
    case 1: arg = (void*)(uintptr_t)rnd(); break;
    case 2: arg = s->ro_page; break;
    case 3:
      arg = buf + 512 - below(16) - 1; /* a struct straddling the random bytes */
      break;
    default: break;
  }
  ioctl(fd, cmd, arg);
  s->calls++;
}

static void do_mmap(struct state* s, int fd) {
  static const uint64_t offsets[] = {
      FAKEGPU_MMAP_FENCE_OFFSET, FAKEGPU_MMAP_SQ_OFFSET, 1ULL << 32, 2ULL << 32, 3ULL << 32, 0x1000,
      (1ULL << 32) + 4096};
  uint64_t off =
      below(4) ? offsets[below(sizeof(offsets) / sizeof(offsets[0]))] : (rnd() & ~0xfffULL);
  size_t len = (size_t)(1 + below(20)) * 4096;
  int prot = below(3) ? PROT_READ | PROT_WRITE : PROT_READ;
  int flags = below(8) ? MAP_SHARED : MAP_PRIVATE;
  void* p = mmap(NULL, len, prot, flags, fd, (off_t)off);
  int i;

  s->calls++;
  if (p == MAP_FAILED) return;
  if (off == FAKEGPU_MMAP_SQ_OFFSET && fd == s->fds[0] && !s->ring && (prot & PROT_WRITE) &&
      len >= FAKEGPU_SQ_ENTRIES_OFFSET + 1024 * sizeof(struct fakegpu_job)) {
    s->ring = p;
    s->ring_entries = 1024;
    return; /* kept until fds[0] is closed */
  }
  if (prot & PROT_WRITE)
    memset(p, (int)below(256), len > 8192 ? 8192 : len);
  else
    (void)*(volatile unsigned char*)p;
  for (i = 0; i < MAX_MAPS; i++)
    if (!s->maps[i].addr) {
      s->maps[i] = (struct mapping){p, len, prot & PROT_WRITE};
      return;
    }
  munmap(p, len);
}

static void do_ring(struct state* s) {
  struct fakegpu_doorbell db;
  struct fakegpu_job* slots;
  uint32_t n = (uint32_t)below(64), i, tail;

  if (!s->ring) return;
  slots = (struct fakegpu_job*)((char*)s->ring + FAKEGPU_SQ_ENTRIES_OFFSET);
  tail = s->ring->tail;
  for (i = 0; i < n; i++) {
    random_struct((unsigned char*)&slots[(tail + i) & (s->ring_entries - 1)],
                  sizeof(struct fakegpu_job));
    if (below(2)) slots[(tail + i) & (s->ring_entries - 1)].op = FAKEGPU_OP_NOP;
  }
  /* Usually a sane tail, sometimes garbage. */
  __atomic_store_n(&s->ring->tail, below(8) ? tail + n : (uint32_t)rnd(), __ATOMIC_RELEASE);
  memset(&db, 0, sizeof(db));
  ioctl(s->fds[0], FAKEGPU_IOCTL_DOORBELL, &db);
  s->calls++;
}

static void close_fd(struct state* s, int i) {
  if (s->fds[i] < 0) return;
  if (i == 0 && s->ring) {
    munmap(s->ring, FAKEGPU_SQ_ENTRIES_OFFSET + 1024 * sizeof(struct fakegpu_job));
    s->ring = NULL;
  }
  close(s->fds[i]);
  s->fds[i] = -1;
}

static void fuzz(struct state* s, double deadline) {
  int i;

  while (now() < deadline) {
    int slot = (int)below(MAX_FDS);
    int fd = s->fds[slot];
    uint64_t action = below(100);

    if (action < 3) {
      const char* node = s->nodes[below((uint64_t)s->nnodes)];
      /* One open in four is read-only: the driver refuses it every write command. */
      int mode = below(4) ? O_RDWR : O_RDONLY;

      close_fd(s, slot);
      s->fds[slot] = open(node, mode | O_CLOEXEC);
    } else if (action < 13) {
      if (fd >= 0) do_mmap(s, fd);
    } else if (action < 18) {
      i = (int)below(MAX_MAPS);
      if (s->maps[i].addr) {
        munmap(s->maps[i].addr, s->maps[i].len);
        s->maps[i].addr = NULL;
      }
    } else if (action < 28) {
      do_ring(s);
    } else if (action == 28 && below(10) == 0) {
      pid_t pid = fork();

      if (pid == 0) {
        /* The child inherits fds and mappings, pokes once, leaves. */
        if (s->fds[0] >= 0) do_ioctl(s, s->fds[0]);
        _exit(0);
      }
      if (pid > 0) waitpid(pid, NULL, 0);
    } else if (fd >= 0) {
      do_ioctl(s, fd);
    }
  }
  /* Leave with work in flight and mappings alive: exit must clean up. */
}

static void child(const char** nodes, int nnodes, uint64_t seed, double deadline, int index) {
  struct state s;
  int i;

  memset(&s, 0, sizeof(s));
  s.nodes = nodes;
  s.nnodes = nnodes;
  for (i = 0; i < MAX_FDS; i++) s.fds[i] = -1;
  rng_state = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)index + 1;
  s.ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  fuzz(&s, deadline);
  printf("# fuzz child %d (uid %d): %lu calls\n", index, (int)getuid(), s.calls);
  fflush(stdout);
  _exit(0);
}

int main(int argc, char** argv) {
  double seconds = 20, deadline;
  uint64_t seed = (uint64_t)time(NULL);
  int procs = 4, i, first = 1, failed = 0, status;
  pid_t* pids;

  while (first + 1 < argc && !strncmp(argv[first], "--", 2)) {
    if (!strcmp(argv[first], "--seconds"))
      seconds = atof(argv[first + 1]);
    else if (!strcmp(argv[first], "--procs"))
      procs = atoi(argv[first + 1]);
    else if (!strcmp(argv[first], "--seed"))
      seed = strtoull(argv[first + 1], NULL, 0);
    else
      break;
    first += 2;
  }
  if (first >= argc || procs < 1 || procs > 64 || seconds <= 0) {
    fprintf(stderr, "usage: fakegpu-fuzz [--seconds N] [--procs N] [--seed N] NODE...\n");
    return 2;
  }
  printf("# fakegpu-fuzz: %d processes, %.0f s, seed %llu\n", procs, seconds,
         (unsigned long long)seed);
  fflush(stdout);
  deadline = now() + seconds;
  pids = calloc((size_t)procs, sizeof(*pids));
  for (i = 0; i < procs; i++) {
    pids[i] = fork();
    if (pids[i] == 0) child((const char**)argv + first, argc - first, seed, deadline, i);
  }
  for (i = 0; i < procs; i++) {
    if (pids[i] < 0 || waitpid(pids[i], &status, 0) < 0) {
      failed = 1;
      continue;
    }
    if (WIFSIGNALED(status)) {
      printf("# fuzz child %d died of signal %d\n", i, WTERMSIG(status));
      failed = 1;
    }
  }
  free(pids);
  return failed;
}
