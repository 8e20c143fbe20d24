// The host's users and groups, as glibc's getpwuid/getgrnam/getgrouplist answer them,
// without glibc's NSS inside mrun. mrun is a static PIE (src/meson.build): there an NSS
// module that glibc loads with dlopen (systemd, sss, ldap) runs against a second copy of
// libc and crashes (SIGSEGV in _nss_systemd_getpwuid_r for a uid without a passwd
// line). So the files (/etc/passwd, /etc/group) are read here, and any other source
// that nsswitch.conf names is asked through getent(1), a dynamically linked program of
// the host's, only where the files do not answer.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace mrun::sys {

struct UserEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};

// Where the answers come from; tests point these at files of their own.
struct UserDbSources {
  std::string passwd = "/etc/passwd";
  std::string group = "/etc/group";
  std::string nsswitch = "/etc/nsswitch.conf";
  std::string getent = "getent";  // searched in PATH
};

std::optional<UserEntry> user_by_uid(uid_t uid, const UserDbSources& db = {});
// UID's name, or the number itself where no source names it.
std::string user_name_or_id(uid_t uid, const UserDbSources& db = {});
std::optional<UserEntry> user_by_name(const std::string& name, const UserDbSources& db = {});
std::optional<GroupEntry> group_by_gid(gid_t gid, const UserDbSources& db = {});
std::optional<GroupEntry> group_by_name(const std::string& name, const UserDbSources& db = {});
// PRIMARY and every group that lists USER, as getgrouplist(3) and initgroups(3) use.
std::vector<gid_t> groups_of_user(const std::string& user, gid_t primary,
                                  const UserDbSources& db = {});

// One passwd / group line, as the files and getent write them (unit-tested).
std::optional<UserEntry> parse_passwd_line(const std::string& line);
std::optional<GroupEntry> parse_group_line(const std::string& line);

}  // namespace mrun::sys
