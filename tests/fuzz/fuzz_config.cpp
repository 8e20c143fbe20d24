// libFuzzer target: an OCI config.json through mrun::oci::parse_spec, the round trip
// to_json -> parse_spec, validate, and the conversion to runtime::ContainerConfig,
// then what the launcher plans from the result (the mount plan of its volumes, the
// device filter of its rules). Only mrun::Error may leave these functions.
//
// The conversion is fuzzed without the two parts that touch the host: linux.devices
// (convert_devices stat()s the host node; each entry's path still goes through the
// pure mount::parse_device) and linux.seccomp (written to a file for the compiler; it
// goes through the seccomp profile parser here instead).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.hpp"
#include "base/log.hpp"
#include "cgroup/device_rules.hpp"
#include "fuzz_check.hpp"
#include "mount/config_mounts.hpp"
#include "mount/devices.hpp"
#include "mount/mount_plan.hpp"
#include "oci/spec.hpp"
#include "runtime/config.hpp"
#include "security/seccomp_profile.hpp"

using nlohmann::json;

namespace {

// spec.hpp promises that parse -> serialise reproduces a config: wherever the input
// and the serialised spec hold a value at the same JSON pointer, it is the same value
// (a number read into a narrower field, or a float into an integer, would differ).
// Values at pointers only one side has are not compared: an empty list left out, a
// default written out.
void check_agrees(const json& input, const json& output) {
  const json in = input.flatten();
  const json out = output.flatten();
  for (const auto& [pointer, value] : out.items()) {
    auto it = in.find(pointer);
    if (it == in.end()) continue;
    // dump() too: nlohmann's == casts 18446744073709551615 to -1 before comparing.
    const bool same = *it == value && it->dump() == value.dump();
    if (!same) {
      std::fprintf(stderr, "%s: input %s, parsed as %s\n", pointer.c_str(), it->dump().c_str(),
                   value.dump().c_str());
    }
    FUZZ_CHECK(same, "the parsed spec differs from config.json");
  }
}

void convert(const mrun::oci::Spec& spec, std::uint32_t uid) {
  static const mrun::Logger quiet(false);
  mrun::runtime::ContainerConfig c;
  try {
    c = mrun::oci::to_container_config(spec, "/bundle", "fuzz", uid, uid, quiet);
  } catch (const mrun::Error&) {
    return;
  }
  FUZZ_CHECK(c.rootfs.front() == '/', "a relative rootfs");
  try {
    mrun::runtime::validate(c);
  } catch (const mrun::Error&) {
  }
  // A bundle's mounts are its own table (mount/config_mounts.hpp): every bind source
  // absolute by now, and the plan made without anything but mrun's own errors.
  for (const auto& m : c.mounts.mounts) {
    bool bind = m.type == "bind" ||
                std::find(m.options.begin(), m.options.end(), "bind") != m.options.end() ||
                std::find(m.options.begin(), m.options.end(), "rbind") != m.options.end();
    FUZZ_CHECK(!bind || (!m.source.empty() && m.source.front() == '/'), "a relative bind source");
  }
  try {
    mrun::mount::plan_config_mounts(c.mounts);
  } catch (const mrun::Error&) {
  }
  try {
    mrun::cgroup::plan_device_rules({{}, {}, c.device_rules, false});
  } catch (const mrun::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mrun::oci::Spec spec;
  try {
    spec = mrun::oci::parse_spec(text);
  } catch (const mrun::Error&) {
    return 0;
  }
  const json once = mrun::oci::to_json(spec);
  mrun::oci::Spec again = mrun::oci::parse_spec(once.dump());  // must parse what it wrote
  FUZZ_CHECK(mrun::oci::to_json(again) == once, "to_json -> parse_spec -> to_json changed it");
  const json doc = json::parse(text);
  check_agrees(doc, once);

  if (auto it = doc.find("process"); it != doc.end()) {
    try {
      mrun::oci::parse_process_text(it->dump());
    } catch (const mrun::Error&) {
    }
  }
  try {
    mrun::oci::validate(spec);
  } catch (const mrun::Error&) {
    return 0;
  }
  if (spec.linux && spec.linux->devices) {
    if (spec.linux->devices->is_array()) {
      for (const auto& d : *spec.linux->devices) {
        if (!d.is_object() || !d.contains("path") || !d["path"].is_string()) continue;
        try {
          mrun::mount::parse_device(d["path"].get<std::string>());
        } catch (const mrun::Error&) {
        }
      }
    }
    spec.linux->devices.reset();
  }
  if (spec.linux && spec.linux->seccomp) {
    try {
      mrun::security::parse_seccomp_profile(spec.linux->seccomp->dump(), "config.json");
    } catch (const mrun::Error&) {
    }
    spec.linux->seccomp.reset();
  }
  if (spec.linux && spec.linux->cgroups_path) {
    mrun::oci::cgroup_parent_from_path(*spec.linux->cgroups_path);
  }
  convert(spec, 1000);
  convert(spec, 0);
  return 0;
}
