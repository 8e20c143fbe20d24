/*
 * hog - resource hog for the cgroup tests (static, so it runs in a busybox rootfs).
 *
 *   hog MB            allocate MB mebibytes in 1 MiB chunks, touching every page so
 *                     the memory is really charged; prints "touched N MB" every 10 MB
 *                     (stdout, unbuffered), then "done N MB" and exits 0.
 *   hog --forks SECS  fork bomb: every process forks as fast as the kernel lets it
 *                     (children fork too), for SECS seconds; then the first process
 *                     prints "pids.current N", "pids.max M" and "fork failures F" read
 *                     from /sys/fs/cgroup (the container's own cgroup) and exits 0,
 *                     which ends the PID namespace and kills the rest.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int memory_hog(long mb) {
  const size_t chunk = 1024 * 1024;
  long page = sysconf(_SC_PAGESIZE);
  setvbuf(stdout, NULL, _IONBF, 0);
  for (long i = 1; i <= mb; ++i) {
    char* p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      printf("mmap failed at %ld MB: %s\n", i, strerror(errno));
      return 1;
    }
    for (size_t off = 0; off < chunk; off += (size_t)page) p[off] = (char)(i + 1);
    if (i % 10 == 0) printf("touched %ld MB\n", i);
  }
  printf("done %ld MB\n", mb);
  return 0;
}

static void print_file(const char* label, const char* path) {
  char buf[256] = "";
  FILE* f = fopen(path, "r");
  if (f != NULL) {
    if (fgets(buf, sizeof buf, f) == NULL) buf[0] = '\0';
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = '\0';
  printf("%s %s\n", label, buf[0] != '\0' ? buf : "?");
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fork_bomb(int seconds) {
  pid_t leader = getpid();
  long failures = 0;
  double end = now() + seconds;
  signal(SIGCHLD, SIG_IGN); /* no zombies: only live processes should count */
  while (now() < end) {
    pid_t pid = fork();
    if (pid == 0) {
      /* A child of the bomb forks on, until the namespace ends. */
      for (;;) {
        if (fork() < 0) usleep(20000);
      }
    }
    if (pid < 0) {
      ++failures;
      usleep(20000);
    }
  }
  if (getpid() != leader) return 0;
  print_file("pids.current", "/sys/fs/cgroup/pids.current");
  print_file("pids.max", "/sys/fs/cgroup/pids.max");
  printf("fork failures %ld\n", failures);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--forks") == 0) return fork_bomb(atoi(argv[2]));
  if (argc == 2 && atol(argv[1]) > 0) return memory_hog(atol(argv[1]));
  fprintf(stderr, "usage: hog MB | hog --forks SECONDS\n");
  return 2;
}
