#include "runtime/cloned_binary.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"
#include "sys/syscalls.hpp"

extern char** environ;

namespace mrun::runtime {

namespace {

// Set in the re-executed copy's environment only; removed as soon as it is seen.
constexpr const char* kMarker = "_MRUN_SEALED_COPY";

UniqueFd open_own_binary() {
  UniqueFd exe(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (!exe) throw_errno("open /proc/self/exe", "mount /proc");
  return exe;
}

}  // namespace

int protective_seals() {
  return F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
}

bool is_sealed_copy(int seals) {
  return seals >= 0 && (seals & protective_seals()) == protective_seals();
}

std::vector<std::string> split_cmdline(const std::string& text) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

bool running_from_sealed_copy() {
  return is_sealed_copy(sys::file_seals(open_own_binary().get()));
}

void reexec_from_sealed_copy() {
  bool sealed = running_from_sealed_copy();
  if (std::getenv(kMarker) != nullptr) {
    ::unsetenv(kMarker);
    if (!sealed) throw Error("re-executed mrun from a sealed copy, but /proc/self/exe is not one");
    return;
  }
  if (sealed) return;

  UniqueFd exe = open_own_binary();
  UniqueFd copy = sys::memfd_create_executable("mrun");
  sys::copy_file_contents(exe.get(), copy.get(), "/proc/self/exe into a memfd");
  sys::add_seals(copy.get(), protective_seals());
  exe.reset();

  auto argv = split_cmdline(sys::read_file("/proc/self/cmdline").value_or(""));
  if (argv.empty()) throw Error("read /proc/self/cmdline: empty");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.push_back(std::string(kMarker) + "=1");
  // MFD_CLOEXEC: the copy's fd closes on this exec; the running image keeps it alive.
  sys::execve_fd(copy.get(), argv, env, "mrun from a sealed memfd copy");
}

}  // namespace mrun::runtime
