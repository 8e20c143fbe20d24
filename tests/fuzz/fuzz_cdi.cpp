// libFuzzer target: a CDI spec through mrun::cdi::parse_spec, the round trip
// to_json -> parse_spec, and resolve() of every device it lists (the edits a container
// would get). Only mrun::Error may leave these functions.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "cdi/cdi_spec.hpp"
#include "fuzz_check.hpp"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The file as a name, too: a line of it may be a qualified device name.
  try {
    mrun::cdi::parse_qualified_name(text.substr(0, text.find('\n')));
  } catch (const mrun::Error&) {
  }
  mrun::cdi::Spec spec;
  try {
    spec = mrun::cdi::parse_spec(text, "/etc/cdi/fuzz.json");
  } catch (const mrun::Error&) {
    return 0;
  }
  const json once = mrun::cdi::to_json(spec);
  mrun::cdi::Spec again = mrun::cdi::parse_spec(once.dump(), "");  // must parse what it wrote
  FUZZ_CHECK(mrun::cdi::to_json(again) == once, "to_json -> parse_spec -> to_json changed it");
  // Wherever the input and the serialised spec hold a value at the same JSON pointer,
  // it is the same value (a number read into a narrower field would differ).
  const json in = json::parse(text).flatten();
  const json out = once.flatten();
  for (const auto& [pointer, value] : out.items()) {
    auto it = in.find(pointer);
    // dump() too: nlohmann's == casts 18446744073709551615 to -1 before comparing.
    if (it != in.end() && (*it != value || it->dump() != value.dump())) {
      std::fprintf(stderr, "%s: input %s, parsed as %s\n", pointer.c_str(), it->dump().c_str(),
                   value.dump().c_str());
      FUZZ_CHECK(false, "the parsed spec differs from the file");
    }
  }

  std::vector<mrun::cdi::QualifiedName> names;
  for (const auto& d : spec.devices) {
    auto name = mrun::cdi::parse_qualified_name(spec.kind + "=" + d.name);
    FUZZ_CHECK(name && name->kind == spec.kind && name->name == d.name,
               "a device of a valid spec has no valid qualified name");
    names.push_back(*name);
  }
  try {
    mrun::cdi::ContainerEdits edits = mrun::cdi::resolve({spec}, names);
    for (const auto& m : edits.mounts) {
      FUZZ_CHECK(!m.container_path.empty() && m.container_path.front() == '/',
                 "a relative container path");
    }
  } catch (const mrun::Error&) {
  }
  try {
    mrun::cdi::resolve({spec}, {{spec.kind, "no-such-device"}, {"other.example/x", "0"}});
  } catch (const mrun::Error&) {
  }
  return 0;
}
