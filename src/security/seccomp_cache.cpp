#include "security/seccomp_cache.hpp"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"

namespace mrun::security {

namespace {

// Bumped when what is checked before a program is cached changes (2: profiles that
// deny execve are refused; 4: notify rules, their listener's path and metadata kept
// with the program; 5: the binary-tree layout, so that an older entry's slower linear
// program is recompiled), so that an older mrun's entry is never taken for a check.
constexpr char magic[] = "mrun-seccomp-cache 5\n";

// The entry's file name: a hash of the key, eight bytes a step. Only a name: the whole
// key stored in the entry is compared byte for byte before it is used, so a collision
// costs a recompile, never a wrong filter. (FNV-1a, a byte a step over the default
// profile's key of some 20 KB, was a measurable part of every start.)
std::uint64_t key_hash(const std::string& text) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ text.size();
  auto mix = [&h](std::uint64_t word) {
    h = (h ^ word) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  };
  std::size_t pos = 0;
  for (; pos + 8 <= text.size(); pos += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + pos, 8);
    mix(word);
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, text.data() + pos, text.size() - pos);
  mix(tail);
  return h;
}

std::string entry_path(const std::string& dir, const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bpf", static_cast<unsigned long long>(key_hash(key)));
  return dir + "/" + name;
}

void put_u64(std::string& out, std::uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

bool get_u64(const std::string& in, std::size_t& pos, std::uint64_t& v) {
  if (in.size() - pos < sizeof v) return false;
  std::memcpy(&v, in.data() + pos, sizeof v);
  pos += sizeof v;
  return true;
}

bool get_bytes(const std::string& in, std::size_t& pos, std::uint64_t n, std::string& out) {
  if (in.size() - pos < n) return false;
  out.assign(in, pos, n);
  pos += n;
  return true;
}

void put_string(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

// Only a directory we own and nobody else may write to.
bool trusted_dir(const std::string& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & 022) == 0;
}

}  // namespace

std::string seccomp_cache_key(const std::string& profile_text, const SeccompTarget& target) {
  const scmp_version* v = seccomp_version();
  std::string key = magic;
  key += "libseccomp " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->micro) + "\n";
  key += "arch " + native_go_arch() + "\n";
  key += "kernel " + target.kernel_release + "\n";
  key += "caps " + std::to_string(target.capabilities) + "\n";
  key += std::string("x32 ") + (target.x32_syscalls ? "on" : "off") + "\n";
  key += "kernel flags " + std::to_string(target.kernel_flags) + " actions " +
         std::to_string(target.kernel_actions) + "\n";
  key += profile_text;
  return key;
}

std::optional<CompiledSeccomp> load_cached_seccomp(const std::string& dir, const std::string& key,
                                                   const Logger& log) {
  if (dir.empty() || !trusted_dir(dir)) return std::nullopt;
  const std::string path = entry_path(dir, key);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 022) != 0 || st.st_size > (16 << 20)) {
    log.debug("seccomp cache: ignoring " + path + " (not a private file of ours)");
    return std::nullopt;
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  // Compared and copied where they lie in DATA: the key holds the whole profile text,
  // and copies of it are heap every start's mrun keeps resident.
  std::size_t pos = 0;
  std::uint64_t n = 0;
  CompiledSeccomp out;
  if (!get_u64(data, pos, n) || n != key.size() || data.size() - pos < n ||
      std::memcmp(data.data() + pos, key.data(), key.size()) != 0) {
    log.debug("seccomp cache: " + path + " is for another profile; recompiling");
    return std::nullopt;
  }
  pos += n;
  std::uint64_t flags = 0, count = 0;
  if (!get_u64(data, pos, flags) || !get_u64(data, pos, count) || count > 4096 ||
      data.size() - pos < count * sizeof(sock_filter)) {
    return std::nullopt;
  }
  out.flags = static_cast<unsigned int>(flags);
  out.program.resize(count);
  std::memcpy(out.program.data(), data.data() + pos, count * sizeof(sock_filter));
  pos += count * sizeof(sock_filter);
  for (auto* list : {&out.architectures, &out.unknown_syscalls}) {
    if (!get_u64(data, pos, count) || count > 100000) return std::nullopt;
    for (std::uint64_t i = 0; i < count; ++i) {
      std::string s;
      if (!get_u64(data, pos, n) || !get_bytes(data, pos, n, s)) return std::nullopt;
      list->push_back(s);
    }
  }
  if (!get_u64(data, pos, n)) return std::nullopt;
  out.rules_added = n;
  for (auto* text : {&out.listener_path, &out.listener_metadata}) {
    if (!get_u64(data, pos, n) || !get_bytes(data, pos, n, *text)) return std::nullopt;
  }
  if (pos != data.size()) return std::nullopt;
  return out;
}

void store_cached_seccomp(const std::string& dir, const std::string& key,
                          const CompiledSeccomp& filter, const Logger& log) {
  if (dir.empty()) return;
  try {
    sys::make_dirs(dir, 0700);
    if (!trusted_dir(dir)) {
      log.debug("seccomp cache: " + dir + " is not a private directory of ours; not caching");
      return;
    }
    std::string data;
    put_string(data, key);
    put_u64(data, filter.flags);
    put_u64(data, filter.program.size());
    data.append(reinterpret_cast<const char*>(filter.program.data()),
                filter.program.size() * sizeof(sock_filter));
    for (const auto* list : {&filter.architectures, &filter.unknown_syscalls}) {
      put_u64(data, list->size());
      for (const auto& s : *list) put_string(data, s);
    }
    put_u64(data, filter.rules_added);
    put_string(data, filter.listener_path);
    put_string(data, filter.listener_metadata);
    // Written whole to a private temporary, then renamed: a reader sees all or nothing.
    const std::string path = entry_path(dir, key);
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) throw_errno("create " + tmp);
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        throw_errno(err, "write " + tmp);
      }
      done += static_cast<std::size_t>(n);
    }
    fd.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      throw_errno(err, "rename " + tmp);
    }
  } catch (const Error& e) {
    log.debug(std::string("seccomp cache: not cached: ") + e.what());
  }
}

}  // namespace mrun::security
