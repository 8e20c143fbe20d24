// A private directory under /tmp for one test, removed with everything in it at the end.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "sys/fs.hpp"

namespace mrun::test {

struct TempDir {
  std::string path;
  // NAME goes into the directory's name, to tell whose a leftover is.
  explicit TempDir(const std::string& name) {
    std::string tmpl = "/tmp/mrun-unit-" + name + "-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { sys::remove_tree(path); }
};

}  // namespace mrun::test
