#include "state/state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>
#include <stdio.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/spares.hpp"
#include "base/strings.hpp"
#include "cgroup/v1_freezer.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"
#include "sys/spare_dirs.hpp"

namespace mrun::runtime {

using nlohmann::json;

std::string to_string(Status status) {
  switch (status) {
    case Status::creating: return "creating";
    case Status::created: return "created";
    case Status::running: return "running";
    case Status::stopped: return "stopped";
  }
  return "unknown";
}

namespace {
Status status_from_string(const std::string& text) {
  if (text == "running") return Status::running;
  if (text == "created") return Status::created;
  if (text == "stopped") return Status::stopped;
  return Status::creating;
}
}  // namespace

std::string state_to_json(const ContainerState& s) {
  json j = {
      {"name", s.name},
      {"status", to_string(s.status)},
      {"pid", s.pid},
      {"pid_start", s.pid_start},
      {"monitor_pid", s.monitor_pid},
      {"monitor_start", s.monitor_start},
      {"exit_code", s.exit_code},
      {"reaped_by_caller", s.reaped_by_caller},
      {"rootfs", s.rootfs},
      {"command", s.command},
      {"created", s.created},
      {"finished", s.finished},
      {"storage_dir", s.storage_dir},
      {"overlay", s.overlay},
      {"remove_on_exit", s.remove_on_exit},
      {"detached", s.detached},
      {"rootless", s.rootless},
      {"subordinate_ids", s.subordinate_ids},
      {"cgroup", s.cgroup},
      {"cgroup_v1", s.cgroup_v1},
      {"device_filter", s.device_filter},
      {"devices_v1", s.devices_v1},
      {"bundle", s.bundle},
      {"annotations", s.annotations},
  };
  return j.dump(2) + "\n";
}

std::string oci_state_json(const ContainerState& state, Status status, int indent) {
  json j = {
      {"ociVersion", oci_version},   {"id", state.name},
      {"status", to_string(status)}, {"pid", status == Status::stopped ? 0 : state.pid},
      {"bundle", state.bundle},
  };
  // `mrun pause` froze its cgroup (cgroup.freeze): the spec's "paused", as runc says.
  if (status == Status::running && !state.cgroup.empty() &&
      trim(sys::read_file(state.cgroup + "/cgroup.freeze").value_or("0")) == "1") {
    j["status"] = "paused";
  }
  // On cgroup v1, the group's freezer.state (cgroup/v1_freezer.hpp).
  if (auto freezer = state.cgroup_v1.find("freezer"); status == Status::running &&
                                                      freezer != state.cgroup_v1.end() &&
                                                      cgroup::v1_frozen(freezer->second)) {
    j["status"] = "paused";
  }
  if (!state.annotations.empty()) j["annotations"] = state.annotations;
  return j.dump(indent);
}

ContainerState state_from_json(const std::string& text) {
  json j = json::parse(text);
  ContainerState s;
  s.name = j.at("name").get<std::string>();
  s.status = status_from_string(j.value("status", "creating"));
  s.pid = j.value("pid", 0);
  s.pid_start = j.value("pid_start", 0ULL);
  s.monitor_pid = j.value("monitor_pid", 0);
  s.monitor_start = j.value("monitor_start", 0ULL);
  s.exit_code = j.value("exit_code", -1);
  s.reaped_by_caller = j.value("reaped_by_caller", false);
  s.rootfs = j.value("rootfs", "");
  s.command = j.value("command", std::vector<std::string>{});
  s.created = j.value("created", "");
  s.finished = j.value("finished", "");
  s.storage_dir = j.value("storage_dir", "");
  s.overlay = j.value("overlay", "");
  s.remove_on_exit = j.value("remove_on_exit", false);
  s.detached = j.value("detached", false);
  s.rootless = j.value("rootless", true);
  s.subordinate_ids = j.value("subordinate_ids", false);
  s.cgroup = j.value("cgroup", "");
  s.cgroup_v1 = j.value("cgroup_v1", std::map<std::string, std::string>{});
  s.device_filter = j.value("device_filter", "");
  s.devices_v1 = j.value("devices_v1", "");
  s.bundle = j.value("bundle", "");
  s.annotations = j.value("annotations", std::map<std::string, std::string>{});
  return s;
}

bool process_alive(pid_t pid, unsigned long long start_time) {
  if (pid <= 0) return false;
  // A zombie is dead: when mrun is SIGKILLed its children are reparented and reaped
  // whenever the new parent gets to it.
  auto stat = sys::process_stat(pid);
  return stat.start_time == start_time && start_time != 0 && stat.state != 'Z' && stat.state != 'X';
}

Status effective_status(const ContainerState& s) {
  if (s.status == Status::stopped) return Status::stopped;
  // created: held before exec; alive while its init waits for `start`.
  if (s.status == Status::running || s.status == Status::created) {
    return process_alive(s.pid, s.pid_start) ? s.status : Status::stopped;
  }
  // "creating": alive while the mrun that is setting it up lives.
  return process_alive(s.monitor_pid, s.monitor_start) ? Status::creating : Status::stopped;
}

StateLock::StateLock(const std::string& root) {
  std::string path = root + "/lock";
  fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd_) throw_errno("open state lock " + path);
  while (::flock(fd_.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw_errno("lock " + path);
  }
}

StateStore::StateStore(std::string root) : root_(std::move(root)) {}

void StateStore::ensure_root() const {
  sys::ensure_private_dir(root_, "state directory",
                          "pass a directory of yours that only you can write with --root DIR");
}

namespace {
// Claims in the making live in their own directory, so that finding a killed one reads
// a handful of entries, not one per kept container.
constexpr const char* scratch_dir = ".claims";
constexpr const char* scratch_prefix = "claim-";
constexpr const char* remove_on_exit_index = ".rm";
constexpr const char* remove_on_exit_anchor = ".anchor";  // dot: never a container's name
constexpr const char* spare_dir = ".spare";
// What a state write fills before it trades places with state.json (StateStore::write).
constexpr const char* next_state_file = "state.json.next";
constexpr int dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// The files a kept directory may hold: what every claim writes.
bool only_claim_files(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (name != "state.json" && name != "exec.json" && name != next_state_file) return false;
  }
  return true;
}

// CONTENT into PATH, over what a kept directory's file held (same inode, its blocks
// reused), or into a new file where there is none.
void rewrite_file(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    sys::write_new_file(path, content);
    return;
  }
  if (::pwrite(fd.get(), content.data(), content.size(), 0) !=
          static_cast<ssize_t>(content.size()) ||
      ::ftruncate(fd.get(), static_cast<off_t>(content.size())) != 0) {
    throw_errno("write " + path);
  }
}

}  // namespace

bool StateStore::claim(const ContainerState& state, const std::vector<NamedFile>& files) const {
  const std::string scratches = root_ + "/" + scratch_dir;
  if (::mkdir(scratches.c_str(), 0700) != 0 && errno != EEXIST) {
    throw_errno("create state directory in " + root_, "pass a writable --root DIR");
  }
  const std::string scratch =
      scratches + "/" + scratch_prefix + std::to_string(::getpid()) + "-" + state.name;
  sys::remove_tree(scratch);
  // A kept state directory, checked to hold only what a claim writes.
  const bool reused =
      kKeepSpares && sys::take_spare_dir(root_ + "/" + spare_dir, scratch, [](int dir) {
        return only_claim_files(sys::directory_entries(dir));
      });
  if (!reused && ::mkdir(scratch.c_str(), 0700) != 0) {
    throw_errno("create state directory in " + root_, "pass a writable --root DIR");
  }
  try {
    auto put = reused ? rewrite_file : [](const std::string& path, const std::string& content) {
      sys::write_new_file(path, content);
    };
    put(scratch + "/state.json", state_to_json(state));
    bool wrote_exec = false;
    for (const auto& [name, content] : files) {
      put(scratch + "/" + name, content);
      wrote_exec = wrote_exec || name == "exec.json";
    }
    // A kept directory's exec.json this claim does not write is not this container's.
    if (reused && !wrote_exec && ::unlink((scratch + "/exec.json").c_str()) != 0 &&
        errno != ENOENT) {
      throw_errno("remove " + scratch + "/exec.json");
    }
  } catch (...) {
    sys::remove_tree(scratch);
    throw;
  }
  if (::renameat2(AT_FDCWD, scratch.c_str(), AT_FDCWD, dir_of(state.name).c_str(),
                  RENAME_NOREPLACE) == 0) {
    if (state.remove_on_exit) {
      // Best effort: the name is claimed now, and without the entry only the full
      // sweep of `mrun list` finds the container should this mrun be killed.
      // A hard link to one empty file of the index, not a file of its own: a directory
      // entry costs no inode to make and none to free (on ext4 without a journal each
      // inode made skips every one freed in the last minute).
      const std::string index = root_ + "/" + remove_on_exit_index;
      const std::string anchor = index + "/" + remove_on_exit_anchor;
      const std::string entry = index + "/" + state.name;
      if (::link(anchor.c_str(), entry.c_str()) != 0) {
        ::mkdir(index.c_str(), 0700);
        UniqueFd made(::open(anchor.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (::link(anchor.c_str(), entry.c_str()) != 0) {  // EMLINK: a file of its own
          UniqueFd own(::open(entry.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        }
      }
    }
    return true;
  }
  int err = errno;
  sys::remove_tree(scratch);
  if (err == EEXIST || err == ENOTEMPTY) return false;
  throw_errno(err, "create state directory " + dir_of(state.name), "pass a writable --root DIR");
}

void StateStore::sweep_scratch() const {
  const std::string scratches = root_ + "/" + scratch_dir;
  DIR* dir = ::opendir(scratches.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> dead;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind(scratch_prefix, 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + std::strlen(scratch_prefix)));
    if (pid <= 0 || ::kill(pid, 0) != 0) dead.push_back(scratches + "/" + name);
  }
  ::closedir(dir);
  for (const auto& path : dead) sys::remove_tree(path);
}

void StateStore::write(const ContainerState& state) const {
  // Written into state.json.next, then the two trade places (RENAME_EXCHANGE): a reader
  // sees the old state.json or the new one, never a torn one, as with a temporary file
  // renamed over it; but the old one becomes the next write's file, so no write makes
  // or frees an inode or a block, and ext4 does not start writeback as it does for a
  // rename over an existing file (auto_da_alloc). Both dear on ext4 without a journal,
  // mounted with discard: a third of a millisecond of every start. No fsync: runtime
  // state (tmpfs under $XDG_RUNTIME_DIR, /run/mrun) means nothing after a reboot.
  // Callers hold the StateLock, so there is one writer of the .next file at a time.
  const std::string dir = dir_of(state.name);
  const std::string next = dir + "/" + next_state_file;
  const std::string current = dir + "/state.json";
  rewrite_file(next, state_to_json(state));
  if (::renameat2(AT_FDCWD, next.c_str(), AT_FDCWD, current.c_str(), RENAME_EXCHANGE) == 0) return;
  // No state.json to trade with, or a filesystem without RENAME_EXCHANGE.
  if ((errno == ENOENT || errno == EINVAL) && ::rename(next.c_str(), current.c_str()) == 0) return;
  throw_errno("replace " + current + " with " + next);
}

std::optional<ContainerState> StateStore::read(const std::string& name) const {
  auto text = sys::read_file(dir_of(name) + "/state.json");
  if (!text) return std::nullopt;
  try {
    return state_from_json(*text);
  } catch (const std::exception&) {
    return std::nullopt;  // torn only if written by something else than mrun
  }
}

std::vector<ContainerState> StateStore::list() const {
  std::vector<ContainerState> states;
  DIR* dir = ::opendir(root_.c_str());
  if (dir == nullptr) return states;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.empty() || name[0] == '.' || entry->d_type != DT_DIR) continue;
    if (auto state = read(name)) states.push_back(*state);
  }
  ::closedir(dir);
  return states;
}

std::vector<std::string> StateStore::remove_on_exit_names() const {
  std::vector<std::string> names;
  DIR* dir = ::opendir((root_ + "/" + remove_on_exit_index).c_str());
  if (dir == nullptr) return names;
  while (struct dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  return names;
}

void StateStore::remove(const std::string& name, bool keep_spare) const {
  if (keep_spare && keep_as_spare(name)) {
    ::unlink((root_ + "/" + remove_on_exit_index + "/" + name).c_str());
    return;
  }
  if (!sys::remove_tree(dir_of(name))) {
    throw Error("remove state directory " + dir_of(name), errno);
  }
  // After the directory: a kill in between leaves an entry without a container, which
  // the next sweep drops.
  ::unlink((root_ + "/" + remove_on_exit_index + "/" + name).c_str());
}

bool StateStore::keep_as_spare(const std::string& name) const {
  if (!kKeepSpares) return false;
  UniqueFd dir(::open(dir_of(name).c_str(), dir_flags));
  if (!dir || !only_claim_files(sys::directory_entries(dir.get()))) return false;
  return sys::keep_spare_dir(root_ + "/" + spare_dir, dir_of(name), kMaxSpareStateDirs);
}

std::string now_rfc3339() {
  return rfc3339_utc(static_cast<std::int64_t>(std::time(nullptr)));
}

std::string rfc3339_utc(std::int64_t unix_seconds) {
  // Not gmtime_r or strftime: glibc's first call of either runs tzset(), which reads
  // /etc/localtime (eight system calls of every start) for a UTC time that needs no zone.
  std::int64_t days = unix_seconds / 86400;
  std::int64_t secs = unix_seconds % 86400;
  if (secs < 0) {
    secs += 86400;
    days -= 1;
  }
  // Days since 1970-01-01 to a civil date: eras of 400 years (146097 days) counted from
  // 0000-03-01, so that the leap day ends a year (Howard Hinnant's days_from_civil, reversed).
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;                                       // [0, 146096]
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const std::int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;                           // [1, 31]
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;                            // [1, 12]
  const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  char buf[96];  // room for any value the format could print
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                static_cast<long long>(year), static_cast<long long>(month),
                static_cast<long long>(day), static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
  return buf;
}

}  // namespace mrun::runtime
