#include "gpucheck/gpu_ps.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iomanip>
#include <map>
#include <sstream>

#include "base/strings.hpp"
#include "gpu/xid.hpp"
#include "gpucheck/host_facts.hpp"
#include "sys/fs.hpp"

namespace mrun::gpucheck {

namespace {

constexpr unsigned kCtlMinor = 255;

std::optional<pid_t> as_pid(std::string_view name) {
  auto n = parse_u64(name);
  if (!n || *n == 0 || *n > 0x3fffffff) return std::nullopt;
  return static_cast<pid_t>(*n);
}

std::vector<std::string> dir_names(const std::string& path, int* err) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) {
    *err = errno;
    return names;
  }
  *err = 0;
  while (const dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  return names;
}

std::string link_target(const std::string& path) {
  char buf[256];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// "key:\tvalue" lines of an fdinfo file.
std::map<std::string, std::string> fields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    out[line.substr(0, colon)] = std::string(trim(std::string_view(line).substr(colon + 1)));
  }
  return out;
}

std::uint64_t number(const std::map<std::string, std::string>& f, const std::string& key) {
  auto it = f.find(key);
  if (it == f.end()) return 0;
  return parse_u64(it->second).value_or(0);
}

// The last NSpid of /proc/PID/status: the pid as its own namespace sees it.
pid_t inner_pid(const std::string& status, pid_t pid) {
  auto f = fields(status);
  auto it = f.find("NSpid");
  if (it == f.end()) return pid;
  std::istringstream words(it->second);
  std::string last, w;
  while (words >> w) last = w;
  return as_pid(last).value_or(pid);
}

pid_t parent_of(const std::string& proc, pid_t pid) {
  auto f = fields(sys::read_file(proc + "/" + std::to_string(pid) + "/status").value_or(""));
  auto it = f.find("PPid");
  return it == f.end() ? 0 : as_pid(it->second).value_or(0);
}

// The container `pid` runs in: one whose init shares its pid namespace (when the
// container has a namespace of its own), else whose init is `pid` or an ancestor.
std::string container_of(const std::string& proc, pid_t pid,
                         const std::vector<ContainerRef>& containers) {
  const std::string own_ns = link_target(proc + "/self/ns/pid");
  const std::string ns = link_target(proc + "/" + std::to_string(pid) + "/ns/pid");
  for (const auto& c : containers) {
    if (c.init_pid <= 0) continue;
    const std::string init_ns = link_target(proc + "/" + std::to_string(c.init_pid) + "/ns/pid");
    if (!ns.empty() && ns == init_ns && init_ns != own_ns) return c.name;
  }
  for (pid_t p = pid, hops = 0; p > 1 && hops < 64; p = parent_of(proc, p), ++hops)
    for (const auto& c : containers)
      if (c.init_pid == p) return c.name;
  return {};
}

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  std::ostringstream out;
  if (u == 0)
    out << bytes << " B";
  else
    out << std::fixed << std::setprecision(1) << v << " " << units[u];
  return out.str();
}

std::string xid_text(unsigned xid, unsigned device_xid) {
  if (device_xid) return fakegpu::xid_label(device_xid) + ", device";
  return xid ? fakegpu::xid_label(xid) : "-";
}

}  // namespace

std::string node_name(unsigned minor) {
  return minor == kCtlMinor ? "fakegpuctl" : "fakegpu" + std::to_string(minor);
}

GpuPs gather_gpu_ps(const std::vector<ContainerRef>& containers, const std::string& proc) {
  GpuPs ps;
  const auto major_number = fakegpu_major();
  ps.module_loaded = major_number.has_value();
  if (!major_number) return ps;

  int err = 0;
  for (const auto& entry : dir_names(proc, &err)) {
    const auto pid = as_pid(entry);
    if (!pid) continue;
    const std::string base = proc + "/" + entry;
    auto fds = dir_names(base + "/fd", &err);
    if (err == EACCES || err == EPERM) {
      ++ps.unreadable;
      continue;
    }
    for (const auto& fd_name : fds) {
      const auto fd = parse_u64(fd_name);
      struct stat st {};
      if (!fd) continue;
      // stat follows the magic link to the node itself, whatever its path there.
      if (::stat((base + "/fd/" + fd_name).c_str(), &st) != 0 || !S_ISCHR(st.st_mode) ||
          ::major(st.st_rdev) != *major_number)
        continue;
      GpuHolder h;
      h.pid = *pid;
      h.fd = static_cast<int>(*fd);
      h.minor = ::minor(st.st_rdev);
      struct stat pst {};
      if (::stat(base.c_str(), &pst) == 0) h.uid = pst.st_uid;
      h.comm = std::string(trim(sys::read_file(base + "/comm").value_or("?")));
      h.pid_inside = inner_pid(sys::read_file(base + "/status").value_or(""), h.pid);
      const auto info = fields(sys::read_file(base + "/fdinfo/" + fd_name).value_or(""));
      if (info.count("fakegpu-ctx")) {
        h.ctx = static_cast<std::uint32_t>(number(info, "fakegpu-ctx"));
        h.memory = number(info, "fakegpu-memory");
        h.handles = number(info, "fakegpu-handles");
        h.jobs_in_flight = number(info, "fakegpu-jobs-in-flight");
        h.xid = static_cast<unsigned>(number(info, "fakegpu-xid"));
        h.device_xid = static_cast<unsigned>(number(info, "fakegpu-device-xid"));
      }
      h.container = container_of(proc, h.pid, containers);
      ps.holders.push_back(std::move(h));
    }
  }
  std::sort(ps.holders.begin(), ps.holders.end(), [](const GpuHolder& a, const GpuHolder& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.fd < b.fd;
  });
  return ps;
}

std::string render_gpu_ps(const GpuPs& ps) {
  if (!ps.module_loaded) return "fakegpu is not loaded: no GPU, nobody holds one\n";
  std::ostringstream out;
  if (ps.holders.empty()) {
    out << "no process holds a fakegpu device\n";
  } else {
    std::vector<std::vector<std::string>> rows{
        {"PID", "CONTAINER", "COMM", "FD", "DEVICE", "CTX", "MEMORY", "HANDLES", "JOBS", "XID"}};
    for (const auto& h : ps.holders) {
      std::string pid = std::to_string(h.pid);
      if (h.pid_inside != h.pid) pid += " (" + std::to_string(h.pid_inside) + ")";
      rows.push_back({pid, h.container.empty() ? "-" : h.container, h.comm, std::to_string(h.fd),
                      node_name(h.minor), h.ctx ? std::to_string(*h.ctx) : "-",
                      h.ctx ? human_bytes(h.memory) : "-", h.ctx ? std::to_string(h.handles) : "-",
                      h.ctx ? std::to_string(h.jobs_in_flight) : "-",
                      h.ctx ? xid_text(h.xid, h.device_xid) : "-"});
    }
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& r : rows)
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i)
        line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
      out << line << "\n";
    }
  }
  if (ps.unreadable)
    out << "(" << ps.unreadable
        << " processes of other users not readable: run as root to see every holder)\n";
  return out.str();
}

nlohmann::json gpu_ps_json(const GpuPs& ps) {
  nlohmann::json holders = nlohmann::json::array();
  for (const auto& h : ps.holders) {
    nlohmann::json j{
        {"pid", h.pid},
        {"pid_in_namespace", h.pid_inside},
        {"uid", h.uid},
        {"comm", h.comm},
        {"fd", h.fd},
        {"device", node_name(h.minor)},
        {"minor", h.minor},
        {"container", h.container.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.container)}};
    if (h.ctx) {
      j["context"] = *h.ctx;
      j["memory_bytes"] = h.memory;
      j["handles"] = h.handles;
      j["jobs_in_flight"] = h.jobs_in_flight;
      j["xid"] = h.xid;
      j["device_xid"] = h.device_xid;
    } else {
      j["context"] = nullptr;
    }
    holders.push_back(std::move(j));
  }
  return {{"module_loaded", ps.module_loaded},
          {"holders", holders},
          {"unreadable_processes", ps.unreadable}};
}

}  // namespace mrun::gpucheck
