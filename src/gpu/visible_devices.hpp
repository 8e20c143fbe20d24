// FAKEGPU_VISIBLE_DEVICES: which GPUs a process sees, like CUDA_VISIBLE_DEVICES.
//
// The variable is read by this library inside the (untrusted) process: it hides
// devices, it does not protect them; the device cgroup or not passing the node into
// a container does that.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fakegpu {

// The result of applying FAKEGPU_VISIBLE_DEVICES to the devices present.
struct Visibility {
  std::vector<unsigned> devices;  // device indices, in the order the variable lists them
  std::string note;               // why parsing stopped early, empty if it did not
};

// Rules (documented in fakegpu(4) and libfakegpu's header):
//   unset                  every present device, in index order
//   "" or "none"           no device
//   "all"                  every present device
//   "2,0"                  devices 2 and 0, in that order; spaces around entries ignored
// As CUDA does, the list is cut at the first entry that is not a decimal index,
// names a device that is not present, or repeats one: the entries before it stay
// visible, and `note` says where it stopped.
Visibility parse_visible_devices(std::optional<std::string_view> value,
                                 const std::vector<unsigned>& present);

}  // namespace fakegpu
