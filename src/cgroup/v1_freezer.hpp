// The cgroup v1 freezer of a container's v1 group (freezer.state), for `mrun pause`
// and `resume` on a v1 or hybrid host, as runc's fs freezer drives it.
#pragma once

#include <string>

namespace mrun::cgroup {

// Writes FROZEN or THAWED to DIR/freezer.state and waits until the kernel reports it:
// freezing is asynchronous (FREEZING while tasks are still on their way into the
// refrigerator). Throws, thawed again, when it does not settle.
void set_v1_frozen(const std::string& dir, bool frozen, const std::string& name);
// Whether DIR/freezer.state reads FROZEN.
bool v1_frozen(const std::string& dir);

}  // namespace mrun::cgroup
