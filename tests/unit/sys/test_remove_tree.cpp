// sys::remove_tree: rm -rf by descriptors, on the shapes mrun removes (an overlay's
// storage with its mode-000 work directory, a state directory) and on what it must not
// follow (a symlink out of the tree).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "sys/fs.hpp"

namespace {

std::string make_temp_dir() {
  char tmpl[] = "/tmp/mrun-remove-tree.XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

void make_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "x", 1) == 1);
  ::close(fd);
}

}  // namespace

TEST_CASE("remove_tree removes an overlay storage with a mode-000 work directory") {
  const std::string root = make_temp_dir();
  for (const char* dir : {"/upper", "/merged", "/work", "/work/work", "/work/work/incompat",
                          "/work/work/incompat/volatile"}) {
    REQUIRE(::mkdir((root + dir).c_str(), 0755) == 0);
  }
  make_file(root + "/work/work/incompat/volatile/dirty");
  make_file(root + "/upper/written-by-the-container");
  // As overlayfs leaves them: no permission at all on the work directories.
  for (const char* dir : {"/work/work/incompat/volatile", "/work/work/incompat", "/work/work"}) {
    REQUIRE(::chmod((root + dir).c_str(), 0) == 0);
  }
  REQUIRE(mrun::sys::remove_tree(root));
  REQUIRE_FALSE(mrun::sys::exists(root));
}

TEST_CASE("remove_tree does not follow a symlink out of the tree") {
  const std::string outside = make_temp_dir();
  make_file(outside + "/keep");
  const std::string root = make_temp_dir();
  REQUIRE(::mkdir((root + "/d").c_str(), 0755) == 0);
  REQUIRE(::symlink(outside.c_str(), (root + "/d/link").c_str()) == 0);
  REQUIRE(::symlink((outside + "/keep").c_str(), (root + "/file-link").c_str()) == 0);
  REQUIRE(mrun::sys::remove_tree(root));
  REQUIRE_FALSE(mrun::sys::exists(root));
  REQUIRE(mrun::sys::exists(outside + "/keep"));
  REQUIRE(mrun::sys::remove_tree(outside));
}

TEST_CASE("remove_tree removes a directory of more entries than one getdents call returns") {
  const std::string root = make_temp_dir();
  for (int i = 0; i < 600; ++i) {
    const std::string dir = root + "/entry-with-a-long-name-" + std::to_string(i);
    if (i % 2 == 0) {
      REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
      make_file(dir + "/f");
    } else {
      make_file(dir);
    }
  }
  REQUIRE(mrun::sys::remove_tree(root));
  REQUIRE_FALSE(mrun::sys::exists(root));
}

TEST_CASE("remove_tree of a missing path is done, of a plain file removes it") {
  const std::string root = make_temp_dir();
  REQUIRE(mrun::sys::remove_tree(root + "/absent"));
  make_file(root + "/file");
  REQUIRE(mrun::sys::remove_tree(root + "/file"));
  REQUIRE_FALSE(mrun::sys::exists(root + "/file"));
  REQUIRE(mrun::sys::remove_tree(root));
}

TEST_CASE("real_path resolves symlinks and dot-dot, and says when a part is missing") {
  const std::string base = make_temp_dir();
  REQUIRE(::mkdir((base + "/a").c_str(), 0700) == 0);
  REQUIRE(::symlink("a", (base + "/link").c_str()) == 0);
  REQUIRE(mrun::sys::real_path(base + "/link/../link/.") == base + "/a");
  errno = 0;
  REQUIRE_FALSE(mrun::sys::real_path(base + "/missing/x"));
  REQUIRE(errno == ENOENT);
  REQUIRE(mrun::sys::remove_tree(base));
}
