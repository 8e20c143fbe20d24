// sys/user_db: the host's users and groups without glibc's NSS (mrun is a static PIE,
// where NSS modules loaded with dlopen crash): the files first, getent(1) for the other
// sources nsswitch.conf names, only when the files do not answer.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sys/fs.hpp"
#include "sys/user_db.hpp"

using mrun::sys::UserDbSources;

namespace {

struct Db {
  std::string dir;
  UserDbSources sources;
  Db(const std::string& nsswitch, const std::string& getent_output) {
    char tmpl[] = "/tmp/mrun-user-db.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    write("passwd",
          "root:x:0:0:root:/root:/bin/bash\n"
          "# a comment line, then a broken one\n"
          "broken:x:notanumber:1:::\n"
          "alice:x:1000:1000:Alice,,,:/home/alice:/bin/sh\n");
    write("group",
          "root:x:0:\n"
          "alice:x:1000:\n"
          "video:x:44:bob,alice\n"
          "fakegpu:x:990:alice\n"
          "other:x:991:bob\n");
    write("nsswitch.conf", nsswitch);
    // A getent of the test's own: answers for what only "the network" knows, and
    // leaves a mark when it is asked at all.
    write("getent", "#!/bin/sh\necho \"$@\" >> " + dir + "/asked\n" + getent_output);
    ::chmod((dir + "/getent").c_str(), 0755);
    sources = {dir + "/passwd", dir + "/group", dir + "/nsswitch.conf", dir + "/getent"};
  }
  ~Db() { mrun::sys::remove_tree(dir); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir + "/" + name) << text;
  }
  bool asked() const { return mrun::sys::exists(dir + "/asked"); }
};

const char* kLdapGetent =
    "case \"$1 $2\" in\n"
    "  'passwd 2000'|'passwd carol') echo 'carol:*:2000:2000:Carol:/home/carol:/bin/sh' ;;\n"
    "  'group 2000'|'group carols') echo 'carols:*:2000:carol' ;;\n"
    "  'initgroups carol') printf 'carol                 2000 3000 44\\n' ;;\n"
    "  *) exit 2 ;;\n"
    "esac\n";

}  // namespace

TEST_CASE("user_db parses passwd and group lines as the files have them") {
  auto u = mrun::sys::parse_passwd_line("alice:x:1000:1001:Alice,,,:/home/alice:/bin/sh");
  REQUIRE(u);
  CHECK(u->name == "alice");
  CHECK(u->uid == 1000);
  CHECK(u->gid == 1001);
  CHECK(u->home == "/home/alice");
  CHECK_FALSE(mrun::sys::parse_passwd_line("broken:x:1:2"));
  CHECK_FALSE(mrun::sys::parse_passwd_line("neg:x:-1:2:::/"));
  CHECK_FALSE(mrun::sys::parse_passwd_line("# comment"));
  auto g = mrun::sys::parse_group_line("video:x:44:bob,alice");
  REQUIRE(g);
  CHECK(g->gid == 44);
  CHECK(g->members == std::vector<std::string>{"bob", "alice"});
  CHECK(mrun::sys::parse_group_line("empty:x:45:")->members.empty());
}

TEST_CASE("user_db answers from the files alone where nsswitch.conf names files only") {
  Db db("passwd: files\ngroup:\tfiles # local\n", kLdapGetent);
  CHECK(mrun::sys::user_by_uid(1000, db.sources)->name == "alice");
  CHECK(mrun::sys::user_by_name("root", db.sources)->home == "/root");
  CHECK(mrun::sys::group_by_name("fakegpu", db.sources)->gid == 990);
  CHECK(mrun::sys::group_by_gid(44, db.sources)->name == "video");
  CHECK(mrun::sys::groups_of_user("alice", 1000, db.sources) == std::vector<gid_t>{1000, 44, 990});
  CHECK_FALSE(mrun::sys::user_by_uid(2000, db.sources));
  CHECK_FALSE(db.asked());  // files only: getent never runs
}

TEST_CASE("user_db asks getent for the other sources, only when the files do not answer") {
  Db db("passwd:         files systemd sss\ngroup: files [NOTFOUND=return] sss\n", kLdapGetent);
  CHECK(mrun::sys::user_by_uid(1000, db.sources)->name == "alice");
  CHECK_FALSE(db.asked());  // found in the files
  auto carol = mrun::sys::user_by_uid(2000, db.sources);
  REQUIRE(carol);
  CHECK(carol->name == "carol");
  CHECK(carol->home == "/home/carol");
  CHECK(db.asked());
  CHECK(mrun::sys::user_by_name("carol", db.sources)->uid == 2000);
  CHECK(mrun::sys::group_by_gid(2000, db.sources)->name == "carols");
  CHECK_FALSE(mrun::sys::user_by_uid(4242, db.sources));  // getent says no: none
  // Memberships come from every source: getent initgroups, the primary group first.
  CHECK(mrun::sys::groups_of_user("carol", 2000, db.sources) == std::vector<gid_t>{2000, 3000, 44});
}

TEST_CASE("user_db without getent or nsswitch.conf still answers from the files") {
  Db db("passwd: files ldap\n", "");
  db.sources.getent = db.dir + "/no-such-getent";
  CHECK(mrun::sys::user_by_uid(1000, db.sources)->name == "alice");
  CHECK_FALSE(mrun::sys::user_by_uid(2000, db.sources));
  db.sources.nsswitch = db.dir + "/no-such-nsswitch";
  CHECK(mrun::sys::groups_of_user("alice", 1000, db.sources) == std::vector<gid_t>{1000, 44, 990});
}

TEST_CASE("user_db agrees with this host's passwd for the test's own user") {
  auto me = mrun::sys::user_by_uid(::getuid());
  REQUIRE(me);
  CHECK(me->uid == ::getuid());
  CHECK(mrun::sys::user_by_name(me->name)->uid == ::getuid());
}
