// A ProcessSpec as JSON, for exec.json: what the container's own process got, kept in
// its state directory so that `mrun exec` starts from it without reading the bundle
// again. Every member of ProcessSpec has its key here, and one that is absent from the
// text (an exec.json an older mrun wrote) reads as the member's default.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/process_spec.hpp"

namespace mrun::runtime {

nlohmann::json process_to_json(const ProcessSpec& process);
// Throws nlohmann::json's exceptions for a value of the wrong type.
ProcessSpec process_from_json(const nlohmann::json& j);

}  // namespace mrun::runtime
