#include "sys/user_db.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>

#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/spawn.hpp"

namespace mrun::sys {

namespace {

std::optional<unsigned long> parse_id(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return {};
  errno = 0;
  unsigned long value = std::strtoul(text.c_str(), nullptr, 10);
  if (errno != 0 || value > 0xfffffffeUL) return {};
  return value;
}

// Whether nsswitch.conf names a source other than "files" for DATABASE ("passwd",
// "group"). Without the file glibc's default is files alone for these.
bool has_other_sources(const UserDbSources& db, const std::string& database) {
  auto text = read_file(db.nsswitch);
  if (!text) return false;
  for (const auto& raw : split(*text, '\n')) {
    std::string line = raw.substr(0, raw.find('#'));
    std::replace(line.begin(), line.end(), '\t', ' ');
    auto colon = line.find(':');
    if (colon == std::string::npos || trim(line.substr(0, colon)) != database) continue;
    for (const auto& word : split(line.substr(colon + 1), ' ')) {
      const std::string source(trim(word));
      // [NOTFOUND=return] and the like are actions, not sources.
      if (!source.empty() && source != "files" && source[0] != '[') return true;
    }
    return false;
  }
  return false;
}

template <typename Entry>
std::optional<Entry> find_in_file(const std::string& path,
                                  std::optional<Entry> (*parse)(const std::string&),
                                  const std::function<bool(const Entry&)>& wanted) {
  auto text = read_file(path);
  if (!text) return {};
  for (const auto& line : split(*text, '\n')) {
    if (auto entry = parse(line); entry && wanted(*entry)) return entry;
  }
  return {};
}

// getent DATABASE KEY: the first line it prints, if it found one.
std::optional<std::string> ask_getent(const UserDbSources& db, const std::string& database,
                                      const std::string& key) {
  try {
    ProgramResult r = run_program({db.getent, database, key});
    if (r.status != 0) return {};
    return r.output.substr(0, r.output.find('\n'));
  } catch (const std::exception&) {
    return {};  // no getent: the files were all there was
  }
}

template <typename Entry>
std::optional<Entry> lookup(const UserDbSources& db, const std::string& database,
                            const std::string& path, const std::string& key,
                            std::optional<Entry> (*parse)(const std::string&),
                            const std::function<bool(const Entry&)>& wanted) {
  if (auto entry = find_in_file<Entry>(path, parse, wanted)) return entry;
  if (!has_other_sources(db, database)) return {};
  auto line = ask_getent(db, database, key);
  if (!line) return {};
  auto entry = parse(*line);
  return entry && wanted(*entry) ? entry : std::nullopt;
}

}  // namespace

std::optional<UserEntry> parse_passwd_line(const std::string& line) {
  auto fields = split(line, ':');
  if (fields.size() < 7 || fields[0].empty()) return {};
  auto uid = parse_id(fields[2]);
  auto gid = parse_id(fields[3]);
  if (!uid || !gid) return {};
  return UserEntry{fields[0], static_cast<uid_t>(*uid), static_cast<gid_t>(*gid), fields[5]};
}

std::optional<GroupEntry> parse_group_line(const std::string& line) {
  auto fields = split(line, ':');
  if (fields.size() < 4 || fields[0].empty()) return {};
  auto gid = parse_id(fields[2]);
  if (!gid) return {};
  GroupEntry entry{fields[0], static_cast<gid_t>(*gid), {}};
  for (const auto& member : split(fields[3], ',')) {
    if (!member.empty()) entry.members.push_back(member);
  }
  return entry;
}

std::optional<UserEntry> user_by_uid(uid_t uid, const UserDbSources& db) {
  return lookup<UserEntry>(db, "passwd", db.passwd, std::to_string(uid), parse_passwd_line,
                           [uid](const UserEntry& e) { return e.uid == uid; });
}

std::string user_name_or_id(uid_t uid, const UserDbSources& db) {
  auto user = user_by_uid(uid, db);
  return user ? user->name : std::to_string(uid);
}

std::optional<UserEntry> user_by_name(const std::string& name, const UserDbSources& db) {
  return lookup<UserEntry>(db, "passwd", db.passwd, name, parse_passwd_line,
                           [&name](const UserEntry& e) { return e.name == name; });
}

std::optional<GroupEntry> group_by_gid(gid_t gid, const UserDbSources& db) {
  return lookup<GroupEntry>(db, "group", db.group, std::to_string(gid), parse_group_line,
                            [gid](const GroupEntry& e) { return e.gid == gid; });
}

std::optional<GroupEntry> group_by_name(const std::string& name, const UserDbSources& db) {
  return lookup<GroupEntry>(db, "group", db.group, name, parse_group_line,
                            [&name](const GroupEntry& e) { return e.name == name; });
}

std::vector<gid_t> groups_of_user(const std::string& user, gid_t primary, const UserDbSources& db) {
  std::vector<gid_t> groups{primary};
  auto add = [&groups](gid_t gid) {
    if (std::find(groups.begin(), groups.end(), gid) == groups.end()) groups.push_back(gid);
  };
  if (has_other_sources(db, "group")) {
    // "getent initgroups USER" prints the name and the gids every source gives.
    if (auto line = ask_getent(db, "initgroups", user)) {
      std::string flat = *line;
      std::replace(flat.begin(), flat.end(), '\t', ' ');
      auto words = split(flat, ' ');
      for (std::size_t i = 1; i < words.size(); ++i) {
        if (auto gid = parse_id(std::string(trim(words[i])))) add(static_cast<gid_t>(*gid));
      }
      return groups;
    }
  }
  if (auto text = read_file(db.group)) {
    for (const auto& line : split(*text, '\n')) {
      auto entry = parse_group_line(line);
      if (entry &&
          std::find(entry->members.begin(), entry->members.end(), user) != entry->members.end()) {
        add(entry->gid);
      }
    }
  }
  return groups;
}

}  // namespace mrun::sys
