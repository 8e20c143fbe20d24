#include "init/exec_failure.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.hpp"

namespace mrun::runtime {

namespace {
bool read_at(int fd, void* buf, std::size_t size, off_t offset) {
  return ::pread(fd, buf, size, offset) == static_cast<ssize_t>(size);
}

std::optional<std::string> elf_interpreter(int fd) {
  Elf64_Ehdr eh{};
  if (!read_at(fd, &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return std::nullopt;
  }
  for (unsigned i = 0; i < eh.e_phnum && i < 64; ++i) {
    Elf64_Phdr ph{};
    if (!read_at(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph))) break;
    if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
    std::string path(ph.p_filesz, '\0');
    if (!read_at(fd, path.data(), path.size(), static_cast<off_t>(ph.p_offset))) break;
    path.resize(std::strlen(path.c_str()));
    return path;
  }
  return std::nullopt;
}
}  // namespace

std::optional<Interpreter> program_interpreter(const std::string& program) {
  UniqueFd fd(::open(program.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  char head[256] = {};
  ssize_t n = ::pread(fd.get(), head, sizeof head - 1, 0);
  if (n > 2 && head[0] == '#' && head[1] == '!') {
    std::string line(head + 2, static_cast<std::size_t>(n) - 2);
    line = line.substr(0, line.find('\n'));
    auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) return std::nullopt;
    return Interpreter{line.substr(start, line.find_first_of(" \t", start) - start), true};
  }
  auto elf = elf_interpreter(fd.get());
  if (!elf) return std::nullopt;
  return Interpreter{*elf, false};
}

std::string missing_interpreter(const std::string& program) {
  auto interpreter = program_interpreter(program);
  if (!interpreter || interpreter->path.empty()) return {};
  struct stat st {};
  if (::stat(interpreter->path.c_str(), &st) == 0) return {};
  if (interpreter->script) {
    return "its interpreter " + interpreter->path + " (the #! line) is not in the container";
  }
  return "its ELF interpreter " + interpreter->path +
         " is not in the container: a dynamically linked program needs its loader and "
         "libraries there (or use a statically linked build)";
}

Error exec_error(const std::string& name, const std::string& path, int err) {
  std::string what = "execute " + name + " (" + path + ")";
  if (err == ENOENT) {
    std::string why = missing_interpreter(path);
    if (!why.empty()) what += ": " + why;
  }
  return Error(what, err, {}, err == ENOENT ? exit_code::not_found : exit_code::cannot_execute);
}

}  // namespace mrun::runtime
