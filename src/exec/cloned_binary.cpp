#include "exec/cloned_binary.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"
#include "sys/namespaces.hpp"
#include "sys/processes.hpp"
#include "sys/sealed_memfd.hpp"

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

std::optional<std::size_t> loadable_size(std::string_view head, std::size_t file_size) {
  Elf64_Ehdr eh;
  if (head.size() < sizeof eh) return std::nullopt;
  std::memcpy(&eh, head.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) {
    return std::nullopt;
  }
  std::size_t phdrs_end = eh.e_phoff + std::size_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff < sizeof eh || phdrs_end > head.size()) return std::nullopt;
  std::size_t end = phdrs_end;
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, head.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset) return std::nullopt;
    end = std::max<std::size_t>(end, ph.p_offset + ph.p_filesz);
  }
  return end;
}

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
  struct stat st {};
  if (::fstat(exe.get(), &st) != 0) throw_errno("stat /proc/self/exe");
  std::string head(64 * 1024, '\0');
  ssize_t got = ::pread(exe.get(), head.data(), head.size(), 0);
  if (got < 0) throw_errno("read /proc/self/exe");
  head.resize(static_cast<std::size_t>(got));
  auto size = static_cast<std::size_t>(st.st_size);
  auto loadable = loadable_size(head, size);

  UniqueFd copy = sys::memfd_create_executable("mrun");
  sys::copy_file_contents(exe.get(), copy.get(), loadable.value_or(size),
                          "/proc/self/exe into a memfd");
  if (loadable && *loadable < size) {
    // The section headers were not copied: say so, so that readelf and debuggers see a
    // well-formed file without sections instead of offsets past its end.
    Elf64_Ehdr eh;
    std::memcpy(&eh, head.data(), sizeof eh);
    eh.e_shoff = 0;
    eh.e_shnum = 0;
    eh.e_shstrndx = SHN_UNDEF;
    if (::pwrite(copy.get(), &eh, sizeof eh, 0) != static_cast<ssize_t>(sizeof eh)) {
      throw_errno("write the copy's ELF header");
    }
  }
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

namespace {
bool maps_outside_id(const std::string& map, unsigned long id) {
  for (const auto& line : split(map, '\n')) {
    unsigned long inside = 0, outside = 0, count = 0;
    if (std::sscanf(line.c_str(), "%lu %lu %lu", &inside, &outside, &count) == 3 && id >= outside &&
        id - outside < count) {
      return true;
    }
  }
  return false;
}
}  // namespace

bool container_may_write_binary(const BinaryAccess& binary, const std::string& uid_map,
                                const std::string& gid_map) {
  if (binary.has_acl || (binary.mode & S_IWOTH) != 0) return true;
  if (maps_outside_id(uid_map, binary.uid)) return true;
  return (binary.mode & S_IWGRP) != 0 && maps_outside_id(gid_map, binary.gid);
}

void protect_binary_before_joining(pid_t container_pid) {
  // `mrun exec` decides first thing and exec_in_container again, for other callers:
  // once found safe for this container, the second call need not look again.
  static pid_t found_safe_for = 0;
  if (container_pid > 0 && container_pid == found_safe_for) return;
  if (running_from_sealed_copy()) return reexec_from_sealed_copy();  // clears the marker
  if (sys::same_namespace(container_pid, "user")) return reexec_from_sealed_copy();
  const std::string proc = "/proc/" + std::to_string(container_pid);
  auto uid_map = sys::read_file(proc + "/uid_map");
  auto gid_map = sys::read_file(proc + "/gid_map");
  UniqueFd exe = open_own_binary();
  struct stat st {};
  if (!uid_map || !gid_map || ::fstat(exe.get(), &st) != 0) return reexec_from_sealed_copy();
  BinaryAccess binary;
  binary.uid = st.st_uid;
  binary.gid = st.st_gid;
  binary.mode = st.st_mode;
  // Any answer but "none" (ENODATA; ENOTSUP: none possible) counts as an ACL.
  binary.has_acl = ::fgetxattr(exe.get(), "system.posix_acl_access", nullptr, 0) >= 0 ||
                   (errno != ENODATA && errno != ENOTSUP);
  if (container_may_write_binary(binary, *uid_map, *gid_map)) reexec_from_sealed_copy();
  found_safe_for = container_pid;
}

}  // namespace mrun::runtime
