// fakegpu-client: runs a fixed list of checks against one fakegpu device and says,
// for the first one that fails, which step failed with which errno. Built twice:
// against libfakegpu.so, and statically (fakegpu-client-static) for bare rootfs
// images such as busybox.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "client_checks.hpp"
#include "fakegpu.hpp"

namespace {

using namespace fakegpu::client;

void usage(std::FILE* to) {
  std::fprintf(
      to,
      "usage: fakegpu-client [--device PATH|INDEX] [--read-only] [--check NAME[,NAME...]]...\n"
      "                      [--json] [--list]\n"
      "\n"
      "Runs checks against a fakegpu device and stops at the first failure, printing\n"
      "'FAIL <check>: <step>: <ERRNO> (<message>)'; 'ALL CHECKS PASSED' when none failed.\n"
      "\n"
      "  --device PATH|INDEX  the device node, or N for /dev/fakegpuN\n"
      "                       (default: the first device FAKEGPU_VISIBLE_DEVICES leaves\n"
      "                       visible, else /dev/fakegpu0)\n"
      "  --read-only          open the device O_RDONLY: the driver then refuses every\n"
      "                       command that allocates or submits (EBADF)\n"
      "  --check NAMES        run only these checks (after 'open'); 'reset' runs only\n"
      "                       when named\n"
      "  --json               print one JSON object instead of lines\n"
      "  --list               print the checks and their exit codes\n"
      "\n"
      "exit status:\n"
      "  %d  every check passed\n"
      "  %d  internal error of the client\n"
      "  %d  usage error\n"
      "  %d  FAKEGPU_VISIBLE_DEVICES hides every device\n",
      kExitPassed, kExitInternal, kExitUsage, kExitNoDevice);
  for (const auto& c : kChecks)
    std::fprintf(to, "  %d  check '%.*s' failed: %.*s%s\n", c.exit_code,
                 static_cast<int>(c.name.size()), c.name.data(), static_cast<int>(c.what.size()),
                 c.what.data(), c.by_default ? "" : " [only with --check]");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 4 && s.find_first_not_of("0123456789") == std::string::npos;
}

int run(int argc, char** argv) {
  std::string device;
  std::vector<std::string> requested;
  bool json = false;
  auto access = fakegpu::Access::read_write;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fakegpu-client: %s needs a value\n", arg.c_str());
        std::exit(kExitUsage);
      }
      return argv[++i];
    };
    if (arg == "--device") {
      device = value();
    } else if (arg == "--check") {
      for (auto& n : split_commas(value())) requested.push_back(n);
    } else if (arg == "--read-only") {
      access = fakegpu::Access::read_only;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--list") {
      for (const auto& c : kChecks)
        std::printf("%-10.*s %d %s\n", static_cast<int>(c.name.size()), c.name.data(), c.exit_code,
                    c.by_default ? "default" : "on-request");
      return kExitPassed;
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return kExitPassed;
    } else {
      std::fprintf(stderr, "fakegpu-client: unknown argument '%s'\n", arg.c_str());
      usage(stderr);
      return kExitUsage;
    }
  }

  const Selection sel = select_checks(requested);
  if (!sel.unknown.empty()) {
    std::fprintf(stderr, "fakegpu-client: unknown check '%s' (see --list)\n",
                 sel.unknown.front().c_str());
    return kExitUsage;
  }

  if (device.empty()) {
    const auto vis = fakegpu::visible_devices();
    if (!vis.devices.empty()) {
      device = fakegpu::device_path(vis.devices.front());
    } else if (std::getenv("FAKEGPU_VISIBLE_DEVICES")) {
      const std::string msg = std::string("no visible device (FAKEGPU_VISIBLE_DEVICES='") +
                              std::getenv("FAKEGPU_VISIBLE_DEVICES") + "'" +
                              (vis.note.empty() ? "" : ", " + vis.note) + ")";
      if (json)
        std::printf(
            "{\"device\":null,\"passed\":false,\"exit_code\":%d,\"error\":\"%s\",\"checks\":[]}\n",
            kExitNoDevice, json_escape(msg).c_str());
      else
        std::printf("FAIL open: %s\n", msg.c_str());
      return kExitNoDevice;
    } else {
      device = fakegpu::device_path(0);  // none present: let open say ENOENT
    }
  } else if (all_digits(device)) {
    device = fakegpu::device_path(static_cast<unsigned>(std::stoul(device)));
  }

  const auto outcomes = run_checks(device, sel.checks, access);
  std::fputs((json ? render_json(device, outcomes) : render_text(outcomes)).c_str(), stdout);
  return exit_status(outcomes);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fakegpu-client: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
