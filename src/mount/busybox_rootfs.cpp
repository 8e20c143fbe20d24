#include "mount/busybox_rootfs.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/spawn.hpp"

namespace mrun::mount {

namespace {
// A static executable has no PT_INTERP program header.
bool is_static_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return false;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(header.e_phoff +
                                         static_cast<Elf64_Off>(i) * header.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return false;
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

bool dir_is_empty(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return false;
  bool empty = true;
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  ::closedir(dir);
  return empty;
}

void write_new(const std::string& path, const std::string& content, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) throw_errno("create " + path);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw_errno("write " + path);
  }
}

void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  auto content = sys::read_file(from);
  if (!content) throw_errno("read " + from);
  write_new(to, *content, mode);
}
}  // namespace

std::string find_static_busybox() {
  for (const char* candidate : {"/bin/busybox", "/usr/bin/busybox"}) {
    if (::access(candidate, X_OK) == 0 && is_static_elf(candidate)) return candidate;
  }
  throw Error("no statically linked busybox on the host", ENOENT,
              "install busybox-static (apt-get install busybox-static)");
}

void make_busybox_rootfs(const std::string& dir, const std::string& busybox) {
  sys::make_dirs(dir, 0755);
  if (!dir_is_empty(dir)) {
    throw Error("rootfs directory " + dir + " is not empty", EEXIST,
                "choose a new or empty directory");
  }
  for (const char* sub : {"bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "root",
                          "home", "run", "var/tmp", "tmp", "mnt"}) {
    sys::make_dirs(dir + "/" + sub, 0755);
  }
  ::chmod((dir + "/tmp").c_str(), 01777);
  ::chmod((dir + "/var/tmp").c_str(), 01777);
  ::chmod((dir + "/root").c_str(), 0700);
  copy_file(busybox, dir + "/bin/busybox", 0755);

  auto list = sys::run_program({busybox, "--list-full"});
  if (list.status != 0) throw Error(busybox + " --list-full failed: " + list.output);
  for (const auto& raw : split(list.output, '\n')) {
    std::string applet(trim(raw));
    if (applet.empty() || applet == "bin/busybox") continue;
    std::string link = dir + "/" + applet;
    sys::make_dirs(link.substr(0, link.rfind('/')), 0755);
    if (::symlink("/bin/busybox", link.c_str()) != 0 && errno != EEXIST)
      throw_errno("symlink " + link);
  }

  write_new(dir + "/etc/passwd",
            "root:x:0:0:root:/root:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
            0644);
  write_new(dir + "/etc/group", "root:x:0:\ntty:x:5:\nnogroup:x:65534:\n", 0644);
  write_new(dir + "/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n", 0644);
  write_new(dir + "/etc/os-release",
            "NAME=\"mrun busybox\"\nID=busybox\nPRETTY_NAME=\"busybox rootfs made by mrun\"\n",
            0644);
}

std::string default_rootfs(const std::string& data_root) {
  std::string path = data_root + "/rootfs/busybox";
  if (sys::is_dir(path + "/bin") && sys::exists(path + "/etc/passwd")) return path;
  std::string busybox = find_static_busybox();
  sys::make_dirs(data_root + "/rootfs", 0700);
  std::string staging = path + ".tmp." + std::to_string(::getpid());
  sys::remove_tree(staging);
  try {
    make_busybox_rootfs(staging, busybox);
  } catch (...) {
    sys::remove_tree(staging);
    throw;
  }
  if (::rename(staging.c_str(), path.c_str()) != 0) {
    int err = errno;
    sys::remove_tree(staging);
    // Lost a race with a concurrent first run: theirs is just as good.
    if ((err == EEXIST || err == ENOTEMPTY) && sys::is_dir(path + "/bin")) return path;
    throw_errno(err, "install default rootfs at " + path);
  }
  return path;
}

}  // namespace mrun::mount
