// mrun start ID   -- see mrun-oci(1)
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "runtime/hooks.hpp"
#include "runtime/state.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class StartCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* start = app.add_subcommand("start", "start the process of a created container");
    start->add_option("ID", id_, "container id")->required();
    return start;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    // Under the lock from check to record: two concurrent starts never both release it.
    std::optional<runtime::StateLock> lock(std::in_place, store.root());
    auto state = read_existing(store, id_);
    switch (runtime::effective_status(state)) {
      case runtime::Status::created: break;
      case runtime::Status::stopped: throw Error("cannot start a container that has stopped");
      case runtime::Status::running: throw Error("cannot start an already running container");
      case runtime::Status::creating: throw Error("cannot start a container in the creating state");
    }
    release(store.dir_of(id_) + "/exec.fifo");
    state.status = runtime::Status::running;
    store.write(state);
    lock.reset();  // a hook may well ask `mrun state`
    // poststart: once the process runs, before start returns; failures are warnings.
    if (auto hooks = sys::read_file(store.dir_of(id_) + "/hooks.json")) {
      try {
        runtime::run_hooks(runtime::hooks_from_json(*hooks).poststart, "poststart",
                           runtime::oci_state_json(state, runtime::Status::running));
      } catch (const Error& e) {
        ctx.log.warn(e.what());
      }
    }
    return 0;
  }

 private:
  // Opening the fifo for reading releases the container's open for writing; it then
  // writes one byte and goes on to exec. Non-blocking, so a container that died
  // meanwhile is an error, not a hang.
  void release(const std::string& fifo) const {
    UniqueFd fd(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd) throw_errno("open exec fifo " + fifo);
    struct pollfd p {
      fd.get(), POLLIN, 0
    };
    int ready;
    do {
      ready = ::poll(&p, 1, 10000);
    } while (ready < 0 && errno == EINTR);
    char byte = 0;
    if (ready <= 0 || ::read(fd.get(), &byte, 1) != 1) {
      throw Error("container " + id_ + " did not take the start signal (did it die?)", ESRCH);
    }
    ::unlink(fifo.c_str());
  }

  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_start_command() {
  return std::make_unique<StartCommand>();
}

}  // namespace mrun::cli
