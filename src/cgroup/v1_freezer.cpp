#include "cgroup/v1_freezer.hpp"

#include <cerrno>
#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

namespace {

std::string state_of(const std::string& dir) {
  return std::string(trim(sys::read_file(dir + "/freezer.state").value_or("")));
}

void write_state(const std::string& dir, const char* value) {
  sys::write_file(dir + "/freezer.state", value);
}

}  // namespace

void set_v1_frozen(const std::string& dir, bool frozen, const std::string& name) {
  using namespace std::chrono_literals;
  if (!frozen) {
    write_state(dir, "THAWED");
    return;  // thawing is immediate
  }
  // A task that keeps forking, or one in an uninterruptible sleep, can keep the group
  // FREEZING; writing FROZEN again retries the tasks, and an occasional thaw lets a
  // stuck one finish what holds it (runc's loop does both).
  for (int i = 0; i < 1000; ++i) {
    if (i % 50 == 49) {
      write_state(dir, "THAWED");
      std::this_thread::sleep_for(10ms);
    }
    write_state(dir, "FROZEN");
    if (i % 25 == 24) std::this_thread::sleep_for(10ms);
    const std::string state = state_of(dir);
    if (state == "FROZEN") return;
    if (state != "FREEZING") {
      throw Error("container " + name + ": " + dir + "/freezer.state reads \"" + state +
                      "\" after FROZEN was written",
                  EIO);
    }
    std::this_thread::sleep_for(1ms);
  }
  write_state(dir, "THAWED");
  throw Error("container " + name + " did not freeze: " + dir + "/freezer.state stayed FREEZING",
              ETIMEDOUT, "a process of it is stuck in the kernel; retry, or kill the container");
}

bool v1_frozen(const std::string& dir) {
  return state_of(dir) == "FROZEN";
}

}  // namespace mrun::cgroup
