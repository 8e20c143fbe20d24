// libFuzzer target, a property test of the path resolver: mrun opens every container
// path with mrun::sys::try_open_in_root / open_in_root (openat2 RESOLVE_IN_ROOT |
// RESOLVE_NO_MAGICLINKS), inside a tree made once in a temporary directory: nested
// directories, symlinks that climb ("../.."), absolute ones, ones to a decoy of a file
// that also exists outside the root, and a loop. The input is a flag byte and a path.
//
// The property: any descriptor returned lies inside the root. Checked twice: by the
// descriptor's /proc/self/fd link (under the root's real path), and, for a directory,
// by walking ".." up to the root (device and inode). The file outside the root must
// never be what was opened. open_in_root must fail exactly when try_open_in_root does,
// and neither may hand EAGAIN (a ".." raced by a rename anywhere on the host) to its
// caller (tests/fuzz/regressions/open_in_root/ holds such a path: it failed only while
// other processes renamed files).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "fuzz_check.hpp"
#include "sys/open_in_root.hpp"

namespace {

struct Tree {
  std::string top;   // the temporary directory
  std::string root;  // top/root, its real path
  int root_fd = -1;
  struct stat root_st {};
  struct stat secret_st {};  // top/outside/secret
};

void must(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::abort();
  }
}

void make_dir(const std::string& path) {
  must(::mkdir(path.c_str(), 0755) == 0, path.c_str());
}
void make_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  must(fd >= 0, path.c_str());
  ::close(fd);
}
void make_link(const char* to, const std::string& path) {
  must(::symlink(to, path.c_str()) == 0, path.c_str());
}

// Removes the tree when the fuzzer exits normally (run.sh also gives it a TMPDIR of
// its own, removed afterwards, for the other ways out).
const std::string* made_top = nullptr;
void remove_tree() {
  if (made_top == nullptr) return;
  std::string cmd = "rm -rf '" + *made_top + "'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "could not remove %s\n", made_top->c_str());
}

const Tree& tree() {
  static const Tree t = [] {
    Tree out;
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mrun-fuzz-root.XXXXXX";
    must(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
    char real[PATH_MAX];
    must(::realpath(tmpl.c_str(), real) != nullptr, "realpath");
    out.top = real;
    make_dir(out.top + "/outside");
    make_file(out.top + "/outside/secret");
    out.root = out.top + "/root";
    const std::string r = out.root;
    make_dir(r);
    for (const char* dir : {"/a", "/a/b", "/a/b/c", "/etc", "/dev", "/outside", "/proc"}) {
      make_dir(r + dir);
    }
    make_file(r + "/etc/passwd");
    make_file(r + "/outside/secret");  // the decoy: what ../outside/secret means inside
    make_file(r + "/a/b/c/file");
    make_link("../..", r + "/a/b/up");
    make_link("../../../../../..", r + "/a/b/c/way-up");
    make_link("/a/b", r + "/abs");
    make_link("/", r + "/slash");
    make_link("../outside/secret", r + "/a/out");
    make_link("../../outside/secret", r + "/escape");
    make_link(out.top.c_str(), r + "/a/top");  // the root's real parent, by absolute path
    make_link((out.top + "/outside/secret").c_str(), r + "/etc/shadow");
    make_link("loop", r + "/loop");
    make_link("/proc/self/root", r + "/proc/root");
    make_link("c/file", r + "/a/b/f");
    out.root_fd = ::open(r.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    must(out.root_fd >= 0, "open root");
    must(::fstat(out.root_fd, &out.root_st) == 0, "stat root");
    must(::stat((out.top + "/outside/secret").c_str(), &out.secret_st) == 0, "stat secret");
    made_top = new std::string(out.top);
    std::atexit(remove_tree);
    return out;
  }();
  return t;
}

bool same(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Walks ".." from a directory descriptor: true when the root is among its ancestors
// (or is the directory itself) before the filesystem's top.
bool below_root(int dir_fd, const Tree& t) {
  mrun::UniqueFd cur(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  for (int depth = 0; depth < 256 && cur; ++depth) {
    struct stat st {};
    if (::fstat(cur.get(), &st) != 0) return false;
    if (same(st, t.root_st)) return true;
    mrun::UniqueFd up(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!up) return false;
    struct stat up_st {};
    if (::fstat(up.get(), &up_st) != 0 || same(up_st, st)) return false;  // at "/"
    cur = std::move(up);
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Tree& t = tree();
  if (size == 0) return 0;
  // No O_CREAT, O_TRUNC or write access: the tree stays the same for every input.
  static const int choices[] = {O_PATH,
                                O_RDONLY,
                                O_PATH | O_DIRECTORY,
                                O_RDONLY | O_DIRECTORY,
                                O_PATH | O_NOFOLLOW,
                                O_RDONLY | O_NOFOLLOW,
                                O_PATH | O_NOFOLLOW | O_DIRECTORY,
                                O_RDONLY | O_NONBLOCK};
  const int flags = choices[data[0] % (sizeof choices / sizeof choices[0])];
  const std::string path(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (path.find('\0') != std::string::npos) return 0;  // not a C path

  int err = 0;
  mrun::UniqueFd fd = mrun::sys::try_open_in_root(t.root_fd, path, flags, &err);
  bool threw = false;
  try {
    mrun::sys::open_in_root(t.root_fd, path, flags);
  } catch (const mrun::Error&) {
    threw = true;
  }
  FUZZ_CHECK(threw == !fd.valid(), "open_in_root and try_open_in_root disagree");
  if (!fd) {
    FUZZ_CHECK(err != 0, "no descriptor and no errno");
    // A ".." raced by a rename elsewhere on the host: the resolver must retry.
    FUZZ_CHECK(err != EAGAIN, "EAGAIN reached the caller");
    return 0;
  }
  FUZZ_CHECK(err == 0, "a descriptor and an errno");

  struct stat st {};
  FUZZ_CHECK(::fstat(fd.get(), &st) == 0, "fstat of the descriptor");
  FUZZ_CHECK(!same(st, t.secret_st), "opened the file outside the root");
  char link[PATH_MAX + 1];
  ssize_t n = ::readlink(mrun::sys::fd_path(fd.get()).c_str(), link, PATH_MAX);
  FUZZ_CHECK(n > 0, "readlink /proc/self/fd");
  const std::string where(link, static_cast<std::size_t>(n));
  if (where != t.root && where.rfind(t.root + "/", 0) != 0) {
    std::fprintf(stderr, "path \"%s\" opened %s, outside %s\n", path.c_str(), where.c_str(),
                 t.root.c_str());
    FUZZ_CHECK(false, "a descriptor outside the root");
  }
  if (S_ISDIR(st.st_mode)) FUZZ_CHECK(below_root(fd.get(), t), "a directory not below the root");
  return 0;
}
