#include "mount/devices.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"

namespace mrun::mount {

namespace {
const char* device_fix = "use --device HOSTPATH[:CTRPATH][:rwm] with absolute paths";

bool is_access(const std::string& text) {
  if (text.empty() || text.size() > 3) return false;
  std::set<char> seen;
  for (char c : text) {
    if ((c != 'r' && c != 'w' && c != 'm') || !seen.insert(c).second) return false;
  }
  return true;
}

// Absolute, not "/", and no "." or ".." component: the path names one entry and
// cannot climb out of /dev (or the container root) textually.
bool clean_absolute(const std::string& path) {
  if (path.size() < 2 || path.front() != '/') return false;
  for (const auto& part : split(path.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}
}  // namespace

DeviceSpec parse_device(const std::string& spec) {
  auto parts = split(spec, ':');
  if (parts.empty() || parts.size() > 3) {
    throw Error("device \"" + spec + "\" is malformed", EINVAL, device_fix);
  }
  DeviceSpec device;
  device.host_path = parts[0];
  device.container_path = parts[0];
  if (parts.size() == 2) {
    // HOSTPATH:CTRPATH or HOSTPATH:rwm, told apart by the leading slash.
    if (!parts[1].empty() && parts[1].front() == '/') {
      device.container_path = parts[1];
    } else {
      device.access = parts[1];
    }
  } else if (parts.size() == 3) {
    device.container_path = parts[1];
    device.access = parts[2];
  }
  if (!is_access(device.access)) {
    throw Error("device \"" + spec + "\": permissions \"" + device.access + "\" are not rwm",
                EINVAL, "give any of r, w, m once each, e.g. --device /dev/fakegpu0:rw");
  }
  if (!clean_absolute(device.host_path) || !clean_absolute(device.container_path)) {
    throw Error("device \"" + spec + "\": paths must be absolute, without . or ..", EINVAL,
                device_fix);
  }
  return device;
}

HostDevice inspect_device(const DeviceSpec& spec) {
  struct stat st {};
  // stat, not lstat: /dev/dri/by-path/... style symlinks on the host name real nodes;
  // the host path is the caller's own choice, not the image's.
  if (::stat(spec.host_path.c_str(), &st) != 0) {
    throw Error("device " + spec.host_path + " does not exist", errno,
                "give an existing character device (ls -l " + spec.host_path + ")");
  }
  if (S_ISBLK(st.st_mode)) {
    throw Error("device " + spec.host_path + " is a block device", EINVAL,
                "only character devices can be passed with --device; use -v for storage");
  }
  if (!S_ISCHR(st.st_mode)) {
    throw Error("device " + spec.host_path + " is not a device node", ENODEV,
                "--device takes a character device such as /dev/fakegpu0; use -v for files");
  }
  HostDevice device;
  device.spec = spec;
  device.major = ::major(st.st_rdev);
  device.minor = ::minor(st.st_rdev);
  device.mode = st.st_mode & 07777;
  device.uid = st.st_uid;
  device.gid = st.st_gid;
  return device;
}

std::vector<MountStep> plan_device_mounts(const std::vector<HostDevice>& devices, bool can_mknod) {
  std::vector<MountStep> steps;
  for (const auto& device : devices) {
    MountStep step;
    step.target = device.spec.container_path;
    step.source = device.spec.host_path;
    if (can_mknod) {
      step.kind = StepKind::device_node;
      step.device = ::makedev(device.major, device.minor);
      step.mode = device.mode;
      step.uid = device.uid;
      step.gid = device.gid;
    } else {
      step.kind = StepKind::bind;
      step.target_is_file = true;
      // The host's inode: usable through a read-only bind, never chmod'ed or chown'ed.
      step.read_only = true;
    }
    steps.push_back(step);
  }
  return steps;
}

std::optional<HostNode> host_node(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return HostNode{static_cast<mode_t>(st.st_mode & S_IFMT), st.st_rdev};
}

std::vector<MountStep> plan_config_devices(
    const std::vector<ConfigDevice>& devices, bool can_mknod,
    const std::function<std::optional<HostNode>(const std::string&)>& host) {
  std::vector<MountStep> steps;
  for (const auto& d : devices) {
    const mode_t type = d.type == 'b' ? S_IFBLK : d.type == 'p' ? S_IFIFO : S_IFCHR;
    const dev_t rdev = type == S_IFIFO ? 0 : ::makedev(d.major, d.minor);
    MountStep step;
    step.target = d.path;
    step.source = d.path;
    if (can_mknod || type == S_IFIFO) {
      step.kind = StepKind::device_node;
      step.node_type = type;
      step.device = rdev;
      step.mode = d.file_mode;
      step.uid = d.uid;
      step.gid = d.gid;
      steps.push_back(step);
      continue;
    }
    const std::string what = "linux.devices (" + d.path + ", " + std::string(1, d.type) + " " +
                             std::to_string(d.major) + ":" + std::to_string(d.minor) + ")";
    auto node = host(d.path);
    if (!node) {
      throw Error(what +
                      ": a rootless container cannot make device nodes, and the host has "
                      "no node at " +
                      d.path + " to bind",
                  ENOENT, "give a device the host has at that path, or run rootful");
    }
    if (node->type != type || node->rdev != rdev) {
      throw Error(what + ": the host's " + d.path + " is another node (" +
                      std::to_string(::major(node->rdev)) + ":" +
                      std::to_string(::minor(node->rdev)) + ")",
                  EINVAL, "give the numbers of the host's node, or run rootful");
    }
    // The host's inode: usable through a read-only bind, never chmod'ed or chown'ed.
    step.kind = StepKind::bind;
    step.target_is_file = true;
    step.read_only = true;
    steps.push_back(step);
  }
  return steps;
}

GpuRequest parse_gpu(const std::string& text) {
  GpuRequest request;
  if (text == "all") {
    request.all = true;
    return request;
  }
  for (const auto& item : split(text, ',')) {
    auto n = parse_u64(item);
    if (!n || *n > 255) {
      throw Error("--gpu \"" + text + "\" is not all or a list of device numbers", EINVAL,
                  "use --gpu all or --gpu 0,1");
    }
    request.indices.push_back(static_cast<unsigned>(*n));
  }
  if (request.indices.empty()) {
    throw Error("--gpu \"" + text + "\" names no device", EINVAL, "use --gpu all or --gpu 0,1");
  }
  return request;
}

std::vector<std::string> list_fakegpu_nodes(const std::string& dev_dir) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(dev_dir.c_str());
  if (dir == nullptr) return names;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (starts_with(name, "fakegpu")) names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

std::vector<DeviceSpec> gpu_device_specs(const GpuRequest& request,
                                         const std::vector<std::string>& present) {
  const std::string load = "load the driver first (modprobe fakegpu)";
  std::vector<unsigned> available;
  bool ctl = false;
  for (const auto& name : present) {
    if (name == "fakegpuctl") ctl = true;
    if (auto n = parse_u64(name.substr(7)); n && name.size() > 7) {
      available.push_back(static_cast<unsigned>(*n));
    }
  }
  std::sort(available.begin(), available.end());
  std::vector<unsigned> chosen = request.all ? available : request.indices;
  if (chosen.empty()) throw Error("--gpu: no /dev/fakegpuN device on this host", ENODEV, load);
  std::vector<DeviceSpec> specs;
  for (unsigned n : chosen) {
    if (std::find(available.begin(), available.end(), n) == available.end()) {
      throw Error("--gpu: /dev/fakegpu" + std::to_string(n) + " does not exist", ENODEV,
                  available.empty() ? load : "pick one of the /dev/fakegpuN nodes present");
    }
    std::string path = "/dev/fakegpu" + std::to_string(n);
    specs.push_back({path, path, "rw"});  // opened, never made: no m
  }
  if (!ctl) throw Error("--gpu: /dev/fakegpuctl does not exist", ENODEV, load);
  specs.push_back({"/dev/fakegpuctl", "/dev/fakegpuctl", "rw"});
  return specs;
}

GpuUserspace find_gpu_userspace(const std::string& mrun_binary, const char* override_dir) {
  std::string bin_dir = mrun_binary.substr(0, mrun_binary.rfind('/'));
  // (library dir, program dir) pairs, most specific first.
  std::vector<std::pair<std::string, std::string>> candidates;
  if (override_dir != nullptr && override_dir[0] != '\0') {
    candidates.emplace_back(override_dir, override_dir);
  } else {
    candidates.emplace_back(bin_dir + "/gpu", bin_dir + "/gpu");  // build tree: src/mrun
    for (const char* lib : {"/../lib/x86_64-linux-gnu", "/../lib64", "/../lib"}) {
      candidates.emplace_back(bin_dir + lib, bin_dir);
    }
  }
  std::string looked;
  for (const auto& [lib_dir, prog_dir] : candidates) {
    looked += (looked.empty() ? "" : ", ") + lib_dir;
    struct stat st {};
    if (::stat((lib_dir + "/libfakegpu.so.1").c_str(), &st) != 0 ||
        ::access((prog_dir + "/fakegpu-client").c_str(), X_OK) != 0) {
      continue;
    }
    GpuUserspace found;
    DIR* dir = ::opendir(lib_dir.c_str());
    if (dir == nullptr) continue;
    std::vector<std::string> names;
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (starts_with(name, "libfakegpu.so")) names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      // Bind the file itself under each name: a bind mount of a symlink would follow
      // it anyway, and the link target's path does not exist in the container.
      const auto real = sys::real_path(lib_dir + "/" + name);
      if (!real) continue;
      struct stat file {};
      // Only files: the build tree also has libfakegpu.so.1.0.0.p/, meson's object dir.
      if (::stat(real->c_str(), &file) != 0 || !S_ISREG(file.st_mode)) continue;
      found.libraries.push_back(*real);
      found.library_names.push_back(name);
    }
    for (const char* prog : {"fakegpu-client", "fakegpu-client-static"}) {
      std::string path = prog_dir + "/" + prog;
      if (::access(path.c_str(), X_OK) == 0) found.programs.push_back(path);
    }
    return found;
  }
  throw Error(
      "--gpu: the fakegpu user-space driver (libfakegpu.so.1, fakegpu-client) is not "
      "installed next to mrun (looked in " +
          looked + ")",
      ENOENT, "install mrun with its gpu part, or set MRUN_FAKEGPU_LIBDIR to their directory");
}

std::vector<MountStep> plan_gpu_userspace(const GpuUserspace& userspace) {
  std::vector<MountStep> steps;
  auto bind = [&](const std::string& source, const std::string& target) {
    MountStep step;
    step.kind = StepKind::bind;
    step.source = source;
    step.target = target;
    step.read_only = true;  // the host's driver: the container uses it, never changes it
    step.target_is_file = true;
    steps.push_back(step);
  };
  const std::string dir = gpu_container_dir;
  for (std::size_t i = 0; i < userspace.libraries.size(); ++i) {
    bind(userspace.libraries[i], dir + "/lib/" + userspace.library_names[i]);
  }
  for (const auto& program : userspace.programs) bind(program, dir + "/bin/" + base_name(program));
  return steps;
}

void add_gpu_environment(std::vector<std::string>& env) {
  const std::string dir = gpu_container_dir;
  auto extend = [&](const std::string& key, const std::string& value, bool prepend) {
    for (auto& entry : env) {
      if (starts_with(entry, key + "=")) {
        std::string old = entry.substr(key.size() + 1);
        if (old.empty()) {
          entry = key + "=" + value;
        } else {
          entry = key + "=" + (prepend ? value + ":" + old : old + ":" + value);
        }
        return;
      }
    }
    env.push_back(key + "=" + value);
  };
  extend("PATH", dir + "/bin", false);
  extend("LD_LIBRARY_PATH", dir + "/lib", true);
}

DeviceMounts resolve_device_mounts(const std::vector<DeviceSpec>& devices,
                                   const std::optional<GpuRequest>& gpu, bool can_mknod) {
  std::vector<DeviceSpec> specs = devices;
  DeviceMounts mounts;
  if (gpu) {
    for (auto& spec : gpu_device_specs(*gpu, list_fakegpu_nodes())) specs.push_back(spec);
    char exe[4096];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) throw_errno("find the mrun binary (/proc/self/exe)");
    mounts.userspace = plan_gpu_userspace(find_gpu_userspace(
        std::string(exe, static_cast<std::size_t>(n)), std::getenv("MRUN_FAKEGPU_LIBDIR")));
  }
  std::vector<HostDevice> found;
  for (const auto& spec : specs) found.push_back(inspect_device(spec));
  mounts.nodes = plan_device_mounts(found, can_mknod);
  mounts.devices = std::move(found);
  return mounts;
}

bool caller_can_open(const HostDevice& device, uid_t uid, const std::vector<gid_t>& groups) {
  mode_t need = 0;
  if (device.spec.access.find('r') != std::string::npos) need |= 4;
  if (device.spec.access.find('w') != std::string::npos) need |= 2;
  mode_t bits = 0;
  if (device.uid == uid) {
    bits = (device.mode >> 6) & 7;
  } else if (std::find(groups.begin(), groups.end(), device.gid) != groups.end()) {
    bits = (device.mode >> 3) & 7;
  } else {
    bits = device.mode & 7;
  }
  return (bits & need) == need;
}

}  // namespace mrun::mount
