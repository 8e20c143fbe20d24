// Container state on disk: <state root>/<name>/state.json, replaced atomically, with
// every change made under an exclusive flock on <state root>/lock so that concurrent
// mrun processes (a monitor recording an exit, a user deleting) never interleave.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/oci_version.hpp"
#include "base/unique_fd.hpp"

namespace mrun::runtime {

// created: an OCI `mrun create`d container, set up and held before exec until `start`.
enum class Status { creating, created, running, stopped };
std::string to_string(Status status);

struct ContainerState {
  std::string name;
  Status status = Status::creating;
  pid_t pid = 0;                     // container init, host pid namespace
  unsigned long long pid_start = 0;  // its start time: guards against pid reuse
  pid_t monitor_pid = 0;             // the mrun process that waits for it
  unsigned long long monitor_start = 0;
  int exit_code = -1;  // -1: unknown (still running, or mrun was killed, or reaped_by_caller)
  // OCI create: the container was the caller's subreaper's (or init's) to reap, not
  // mrun's, so its exit status is the caller's and mrun never learns it.
  bool reaped_by_caller = false;
  std::string rootfs;
  std::vector<std::string> command;
  std::string created;  // RFC 3339, UTC
  std::string finished;
  std::string storage_dir;  // upper/work/merged live here
  std::string overlay;      // native | fuse | none
  bool remove_on_exit = false;
  bool detached = false;
  bool rootless = true;
  bool subordinate_ids = false;  // the id map used (needed to delete the upper dir)
  std::string cgroup;            // its cgroup v2 leaf (absolute path), empty: none
  // Rootful on a v1/hybrid host: its cgroup v1 group, controller -> directory
  // (cgroup/v1_group.hpp), recorded before the first directory is made so that a delete
  // after a killed mrun removes them all; empty: none.
  std::map<std::string, std::string> cgroup_v1;
  // Who attached its device filter: "bpf" (mrun, libbpf), "helper" (mrun-gpu-helper),
  // "v1" (the cgroup v1 devices controller), or "none: <reason>".
  std::string device_filter;
  // Rootful on a v1/hybrid host: its cgroup v1 devices group (device_filter "v1").
  std::string devices_v1;
  std::string bundle;                              // OCI bundle (absolute), empty: not run from one
  std::map<std::string, std::string> annotations;  // config.json's, for `mrun state`
};

std::string state_to_json(const ContainerState& state);

// The state as the runtime spec defines it (`mrun state`, and hooks' stdin): ociVersion,
// id, status, pid (0 once stopped, as runc), bundle, annotations when there are any.
// `indent` as nlohmann's dump.
std::string oci_state_json(const ContainerState& state, Status status, int indent = -1);
ContainerState state_from_json(const std::string& text);

// Live status: a "running" record whose init process is gone (mrun was SIGKILLed, the
// machine rebooted) reads as stopped.
bool process_alive(pid_t pid, unsigned long long start_time);
Status effective_status(const ContainerState& state);

class StateLock {
 public:
  explicit StateLock(const std::string& root);

 private:
  UniqueFd fd_;
};

class StateStore {
 public:
  explicit StateStore(std::string root);
  const std::string& root() const noexcept { return root_; }
  std::string dir_of(const std::string& name) const { return root_ + "/" + name; }

  // Creates <root> (private) if needed; throws a clear error when it is not writable.
  void ensure_root() const;
  // Claims the state's name and records it in one step: the directory is made and
  // filled under a temporary name, then renamed into place with RENAME_NOREPLACE, so
  // a container directory never exists without its state.json (an mrun killed halfway
  // leaves only a scratch directory in <root>/.claims, swept by `sweep_scratch`). Call under
  // the lock. Returns false when the name is taken. `files` (name, content) go into the
  // directory with state.json, before the rename: written once, plainly, since nobody
  // reads a scratch directory (no temporary file and rename each, as a later write
  // needs).
  using NamedFile = std::pair<std::string, std::string>;
  bool claim(const ContainerState& state, const std::vector<NamedFile>& files = {}) const;
  // Removes scratch directories of claims whose mrun died before finishing them.
  void sweep_scratch() const;
  // The names of the claimed --rm containers, from an index (<root>/.rm/NAME, made by
  // claim, removed by remove): what a start must look at for leftovers of a killed
  // mrun, without reading the state of every kept container. A claim killed between
  // its rename and its index entry is found by list() (`mrun list` sweeps it all).
  std::vector<std::string> remove_on_exit_names() const;
  void write(const ContainerState& state) const;
  std::optional<ContainerState> read(const std::string& name) const;
  std::vector<ContainerState> list() const;
  // With KEEP_SPARE (the end of an --rm container), a directory holding only
  // state.json and exec.json is kept in STATE/.spare for the next claim, which rewrites
  // the files in place (at most kMaxSpareStateDirs): a directory and two files fewer to
  // make and to free per start, dear on ext4 without a journal (state/storage.hpp).
  void remove(const std::string& name, bool keep_spare = false) const;
  static constexpr std::size_t kMaxSpareStateDirs = 4;

 private:
  bool keep_as_spare(const std::string& name) const;
  std::string root_;
};

std::string now_rfc3339();
// UNIX_SECONDS as YYYY-MM-DDTHH:MM:SSZ (UTC), the form of now_rfc3339.
std::string rfc3339_utc(std::int64_t unix_seconds);

}  // namespace mrun::runtime
