#include "base/phase_trace.hpp"

#ifdef MRUN_PHASE_TRACE
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace mrun {

void trace_phase(const char* name) noexcept {
  static int fd = -2;
  if (fd == -2) {
    const char* path = std::getenv("MRUN_PHASE_FILE");
    fd = path == nullptr ? -1 : ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  if (fd < 0) return;
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  char line[128];
  int n = std::snprintf(line, sizeof line, "%s %lld %d\n", name,
                        static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec,
                        static_cast<int>(::getpid()));
  if (n > 0) [[maybe_unused]]
    ssize_t written = ::write(fd, line, static_cast<size_t>(n));
}

}  // namespace mrun
#endif
