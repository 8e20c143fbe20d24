#include "lifecycle/lifecycle.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <optional>
#include <thread>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "init/exec_fifo.hpp"
#include "lifecycle/processes.hpp"
#include "runtime/hooks.hpp"
#include "state/teardown.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"

namespace mrun::runtime {

namespace {

// Opening the fifo for reading releases the container's open for writing; it then runs
// its startContainer hooks and writes its record (init/exec_fifo.hpp): the go byte,
// then it execs, or why it stopped. Unlinked at once: a second start finds no fifo.
UniqueFd open_exec_fifo_for_start(const std::string& fifo, const std::string& id) {
  UniqueFd fd(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd && errno == ENOENT) {
    throw Error("container " + id + " is being started by another `mrun start`", EBUSY);
  }
  if (!fd) throw_errno("open exec fifo " + fifo);
  ::unlink(fifo.c_str());
  return fd;
}

// As long as the container lives, start waits for its record however long its hooks
// take (as runc does; a hook's own timeout bounds it). Non-blocking, with a look at the
// container between polls: a FIFO whose writer never opened it reports no hang-up, so a
// container that died before its open would otherwise be waited for forever.
void wait_for_start_record(const UniqueFd& fifo, const ContainerState& state) {
  struct pollfd p {
    fifo.get(), POLLIN, 0
  };
  int ready = 0;
  while (true) {
    ready = ::poll(&p, 1, 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready != 0 || !process_alive(state.pid, state.pid_start)) break;
  }
  char record[PIPE_BUF];
  ssize_t n = ready > 0 ? ::read(fifo.get(), record, sizeof record) : 0;
  check_start_record(std::string_view(record, n > 0 ? static_cast<std::size_t>(n) : 0), state.name);
}

// The config's poststart hooks, from the state dir (a bundle may have changed since
// create), with the container's state on stdin; a failure is a warning (the spec).
void run_poststart_hooks(const StateStore& store, const ContainerState& state, const Context& ctx) {
  auto text = sys::read_file(store.dir_of(state.name) + "/hooks.json");
  if (!text) return;
  Hooks hooks;
  try {
    hooks = hooks_from_json(*text);
  } catch (const Error& e) {
    ctx.log.warn(e.wrap("poststart hooks").what());
    return;
  }
  run_hooks_warning_on_failure(hooks.poststart, "poststart", oci_state_json(state, Status::running),
                               ctx.log);
}

// Gives a container's monitor a moment to record the exit and clean up, so that delete
// does not race it for the state directory. `mrun run --bundle` deletes its container
// itself, as its own monitor, once that monitor is done: it never waits for itself.
void wait_for_monitor(const ContainerState& state) {
  if (state.monitor_pid == ::getpid()) return;
  for (int i = 0; i < 500 && process_alive(state.monitor_pid, state.monitor_start); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

ContainerState existing_container(const StateStore& store, const std::string& id) {
  auto state = store.read(id);
  if (!state) throw Error("container does not exist: " + id, ENOENT, "see `mrun list`");
  return *state;
}

void start_container(const Context& ctx, const std::string& id) {
  StateStore store(ctx.state_root);
  ContainerState state;
  UniqueFd fifo;
  {
    // Under the lock from check to open: of two concurrent starts only the first finds
    // the fifo, which it unlinks.
    StateLock lock(store.root());
    state = existing_container(store, id);
    switch (effective_status(state)) {
      case Status::created: break;
      case Status::stopped: throw Error("cannot start a container that has stopped");
      case Status::running: throw Error("cannot start an already running container");
      case Status::creating: throw Error("cannot start a container in the creating state");
    }
    fifo = open_exec_fifo_for_start(store.dir_of(id) + "/exec.fifo", id);
  }
  // Outside the lock: the startContainer hooks run now, and other containers' verbs
  // must not wait for them.
  wait_for_start_record(fifo, state);
  {
    // The monitor records `running` too once it sees the exec, and `stopped` at the
    // exit: only a record still saying `created` is changed.
    StateLock lock(store.root());
    auto now = store.read(id);
    if (now && now->status == Status::created) {
      now->status = Status::running;
      store.write(*now);
    }
    state.status = Status::running;
  }
  // Outside the lock: a hook may well ask `mrun state`.
  run_poststart_hooks(store, state, ctx);
}

void kill_container(const Context& ctx, const std::string& id, int signal, bool all) {
  StateStore store(ctx.state_root);
  const ContainerState state = existing_container(store, id);
  auto status = effective_status(state);
  if (status != Status::running && status != Status::created) {
    throw Error("container \"" + id + "\" is not running (container not running)", ESRCH);
  }
  if (all) {
    for (pid_t pid : container_processes(state)) {
      try {
        UniqueFd fd = sys::pidfd_open(pid);
        sys::pidfd_send_signal(fd.get(), signal);
      } catch (const Error&) {
        // gone already
      }
    }
    if (signal == SIGKILL) thaw_after_kill(state);
    return;
  }
  // pidfd + start time: never signal a process that merely reused the pid.
  UniqueFd pidfd = sys::pidfd_open(state.pid);
  if (!process_alive(state.pid, state.pid_start) || !sys::pidfd_send_signal(pidfd.get(), signal)) {
    throw Error("container \"" + id + "\" is not running", ESRCH);
  }
  if (signal == SIGKILL) thaw_after_kill(state);
}

void delete_container(const Context& ctx, const std::string& id, bool force) {
  StateStore store(ctx.state_root);
  auto state = store.read(id);
  if (!state && !sys::exists(store.dir_of(id))) {
    if (force) return;  // as runc: --force deletes what exists, and nothing is fine
    throw Error("container does not exist: " + id, ENOENT, "see `mrun list`");
  }
  auto status = state ? effective_status(*state) : Status::stopped;
  // As runc: a created container (its process never ran) is deleted without --force.
  if (state && status != Status::stopped) {
    if (!force && status != Status::created) {
      throw Error("cannot delete container " + id + " that is not stopped: " + to_string(status),
                  EBUSY, "stop it with `mrun kill " + id + "` or use `mrun delete -f`");
    }
    if (process_alive(state->pid, state->pid_start)) {
      UniqueFd pidfd = sys::pidfd_open(state->pid);
      sys::pidfd_send_signal(pidfd.get(), SIGKILL);
      thaw_after_kill(*state);
    }
  }
  // Also when it is stopped: an OCI-created container is reaped by the engine, which may
  // delete it while mrun's monitor still cleans up after it.
  if (state) wait_for_monitor(*state);
  // Read before the state dir goes: poststop runs after the container is gone (the spec).
  auto hooks_json = sys::read_file(store.dir_of(id) + "/hooks.json");
  {
    StateLock lock(store.root());
    // Another delete may have won the race while we waited for the lock.
    if (!sys::exists(store.dir_of(id))) {
      if (force) return;
      throw Error("container does not exist: " + id, ENOENT, "see `mrun list`");
    }
    remove_container(ctx, id);
  }
  if (hooks_json && state) {
    Hooks hooks;
    try {
      hooks = hooks_from_json(*hooks_json);
    } catch (const Error& e) {
      ctx.log.warn(e.wrap("poststop hooks").what());
      return;
    }
    run_hooks_warning_on_failure(hooks.poststop, "poststop",
                                 oci_state_json(*state, Status::stopped), ctx.log);
  }
}

}  // namespace mrun::runtime
