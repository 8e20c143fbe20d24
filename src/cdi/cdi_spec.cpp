#include "cdi/cdi_spec.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <set>
#include <type_traits>
#include <utility>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::cdi {

using json = nlohmann::json;

namespace {

// The versions whose fields mrun knows (the later ones only add fields mrun ignores
// or refuses by name: hooks, annotations, intelRdt, additionalGIDs).
const std::set<std::string> known_versions{"0.3.0", "0.4.0", "0.5.0", "0.6.0"};

// "devices[0].name", or "kind" at the top level.
std::string at(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error("CDI spec " + (file_.empty() ? std::string("(generated)") : file_) + ": " + field +
                    ": " + what,
                EINVAL, "fix or remove the file (`mrun cdi generate` writes a valid one)");
  }

  std::string string(const json& obj, const std::string& key, const std::string& field,
                     bool required) const {
    if (!obj.contains(key)) {
      if (required) fail(at(field, key), "missing");
      return {};
    }
    if (!obj[key].is_string()) fail(at(field, key), "must be a string");
    return obj[key].get<std::string>();
  }

  std::optional<std::string> opt_string(const json& obj, const std::string& key,
                                        const std::string& field) const {
    if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
    return string(obj, key, field, true);
  }

  template <typename T>
  std::optional<T> opt_integer(const json& obj, const std::string& key,
                               const std::string& field) const {
    if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
    const json& v = obj[key];
    if (!v.is_number_integer()) fail(at(field, key), "must be an integer");
    if constexpr (std::is_unsigned_v<T>) {
      if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0) {
        fail(at(field, key), "must not be negative");
      }
    }
    // get<T>() casts: a uid of 4294967296 would be 0 (root), a major of 2^64-1 would be
    // -1 (tests/fuzz/regressions/cdi/).
    if (v.is_number_unsigned() ? !std::in_range<T>(v.get<std::uint64_t>())
                               : !std::in_range<T>(v.get<std::int64_t>())) {
      fail(at(field, key), v.dump() + " is out of range");
    }
    return v.get<T>();
  }

  std::vector<std::string> strings(const json& obj, const std::string& key,
                                   const std::string& field) const {
    std::vector<std::string> out;
    if (!obj.contains(key) || obj[key].is_null()) return out;
    if (!obj[key].is_array()) fail(at(field, key), "must be an array of strings");
    for (const auto& item : obj[key]) {
      if (!item.is_string()) fail(at(field, key), "must be an array of strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  const json& array(const json& obj, const std::string& key, const std::string& field) const {
    static const json none = json::array();
    if (!obj.contains(key) || obj[key].is_null()) return none;
    if (!obj[key].is_array()) fail(at(field, key), "must be an array");
    return obj[key];
  }

  ContainerEdits edits(const json& obj, const std::string& field) const {
    ContainerEdits e;
    if (obj.is_null()) return e;
    if (!obj.is_object()) fail(field, "must be an object");
    e.env = strings(obj, "env", field);
    for (std::size_t i = 0; i < e.env.size(); ++i) {
      if (e.env[i].find('=') == std::string::npos || e.env[i].front() == '=') {
        fail(field + ".env[" + std::to_string(i) + "]", "\"" + e.env[i] + "\" is not KEY=VALUE");
      }
    }
    const json& nodes = array(obj, "deviceNodes", field);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      std::string f = field + ".deviceNodes[" + std::to_string(i) + "]";
      if (!nodes[i].is_object()) fail(f, "must be an object");
      DeviceNode n;
      n.path = string(nodes[i], "path", f, true);
      n.host_path = opt_string(nodes[i], "hostPath", f);
      n.type = opt_string(nodes[i], "type", f);
      n.major = opt_integer<std::int64_t>(nodes[i], "major", f);
      n.minor = opt_integer<std::int64_t>(nodes[i], "minor", f);
      n.permissions = opt_string(nodes[i], "permissions", f);
      n.file_mode = opt_integer<std::uint32_t>(nodes[i], "fileMode", f);
      n.uid = opt_integer<std::uint32_t>(nodes[i], "uid", f);
      n.gid = opt_integer<std::uint32_t>(nodes[i], "gid", f);
      if (n.path.empty() || n.path.front() != '/') fail(f + ".path", "must be an absolute path");
      if (n.host_path && (n.host_path->empty() || n.host_path->front() != '/')) {
        fail(f + ".hostPath", "must be an absolute path");
      }
      if (n.type && *n.type != "c" && *n.type != "b" && *n.type != "u" && *n.type != "p") {
        fail(f + ".type", "\"" + *n.type + "\" is not one of c, b, u, p");
      }
      if (n.permissions) {
        std::set<char> seen;
        for (char c : *n.permissions) {
          if ((c != 'r' && c != 'w' && c != 'm') || !seen.insert(c).second) {
            fail(f + ".permissions", "\"" + *n.permissions + "\" is not a subset of rwm");
          }
        }
      }
      e.device_nodes.push_back(n);
    }
    const json& mounts = array(obj, "mounts", field);
    for (std::size_t i = 0; i < mounts.size(); ++i) {
      std::string f = field + ".mounts[" + std::to_string(i) + "]";
      if (!mounts[i].is_object()) fail(f, "must be an object");
      Mount m;
      m.host_path = string(mounts[i], "hostPath", f, true);
      m.container_path = string(mounts[i], "containerPath", f, true);
      m.type = opt_string(mounts[i], "type", f);
      m.options = strings(mounts[i], "options", f);
      if (m.container_path.empty() || m.container_path.front() != '/') {
        fail(f + ".containerPath", "must be an absolute path");
      }
      e.mounts.push_back(m);
    }
    if (obj.contains("hooks") && !obj["hooks"].is_null()) e.hooks = obj["hooks"];
    return e;
  }

 private:
  std::string file_;
};

bool valid_vendor(const std::string& s) {
  // A domain-like name: letters, digits, '-', '_', '.'; starts with a letter, ends
  // with a letter or digit (the CDI library's ValidateVendorName).
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s.front())) ||
      !std::isalnum(static_cast<unsigned char>(s.back()))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool valid_class(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s.front())) ||
      !std::isalnum(static_cast<unsigned char>(s.back()))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

bool valid_device_name(const std::string& s) {
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s.front())) ||
      !std::isalnum(static_cast<unsigned char>(s.back()))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ':';
  });
}

bool valid_kind(const std::string& kind) {
  auto slash = kind.find('/');
  return slash != std::string::npos && valid_vendor(kind.substr(0, slash)) &&
         valid_class(kind.substr(slash + 1));
}

json edits_json(const ContainerEdits& e) {
  json out = json::object();
  if (!e.env.empty()) out["env"] = e.env;
  if (!e.device_nodes.empty()) {
    json nodes = json::array();
    for (const auto& n : e.device_nodes) {
      json j{{"path", n.path}};
      if (n.host_path) j["hostPath"] = *n.host_path;
      if (n.type) j["type"] = *n.type;
      if (n.major) j["major"] = *n.major;
      if (n.minor) j["minor"] = *n.minor;
      if (n.permissions) j["permissions"] = *n.permissions;
      if (n.file_mode) j["fileMode"] = *n.file_mode;
      if (n.uid) j["uid"] = *n.uid;
      if (n.gid) j["gid"] = *n.gid;
      nodes.push_back(j);
    }
    out["deviceNodes"] = nodes;
  }
  if (!e.mounts.empty()) {
    json mounts = json::array();
    for (const auto& m : e.mounts) {
      json j{{"hostPath", m.host_path}, {"containerPath", m.container_path}};
      if (m.type) j["type"] = *m.type;
      if (!m.options.empty()) j["options"] = m.options;
      mounts.push_back(j);
    }
    out["mounts"] = mounts;
  }
  if (!e.hooks.is_null()) out["hooks"] = e.hooks;
  return out;
}

// What mrun can apply: bind mounts and device nodes; no hooks.
void check_applicable(const ContainerEdits& e, const std::string& where) {
  if (!e.hooks.is_null() && !e.hooks.empty()) {
    throw Error(where + ": containerEdits.hooks: mrun runs no CDI hooks", ENOTSUP,
                "use a spec without hooks, or an engine (podman) that runs them");
  }
  for (const auto& m : e.mounts) {
    bool bind = !m.type || *m.type == "bind" ||
                std::find(m.options.begin(), m.options.end(), "bind") != m.options.end() ||
                std::find(m.options.begin(), m.options.end(), "rbind") != m.options.end();
    if (!bind) {
      throw Error(where + ": mount of type " + m.type.value_or("") + " on " + m.container_path +
                      ": only bind mounts are supported",
                  ENOTSUP, "use a bind mount in the CDI spec");
    }
  }
  for (const auto& n : e.device_nodes) {
    if (n.type && *n.type != "c") {
      throw Error(where + ": device node " + n.path + " of type " + *n.type +
                      ": only character devices are supported",
                  ENOTSUP, "list character devices only");
    }
  }
}

}  // namespace

Spec parse_spec(const std::string& text, const std::string& file) {
  Reader r(file);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double (1e999) is out_of_range
    // (found by tests/fuzz/fuzz_cdi.cpp); one such file in /etc/cdi must be an error
    // naming it, not a foreign exception.
    r.fail("(document)", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) r.fail("(document)", "must be a JSON object");
  Spec spec;
  spec.file = file;
  spec.version = r.string(doc, "cdiVersion", "", true);
  if (!known_versions.count(spec.version)) {
    r.fail("cdiVersion", "\"" + spec.version + "\" is not one of 0.3.0, 0.4.0, 0.5.0, 0.6.0");
  }
  spec.kind = r.string(doc, "kind", "", true);
  if (!valid_kind(spec.kind)) {
    r.fail("kind", "\"" + spec.kind + "\" is not vendor/class (e.g. fakegpu.example/gpu)");
  }
  const json& devices = r.array(doc, "devices", "");
  if (devices.empty()) r.fail("devices", "a spec must list at least one device");
  std::set<std::string> names;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::string f = "devices[" + std::to_string(i) + "]";
    if (!devices[i].is_object()) r.fail(f, "must be an object");
    Device d;
    d.name = r.string(devices[i], "name", f, true);
    if (!valid_device_name(d.name)) r.fail(f + ".name", "\"" + d.name + "\" is not a valid name");
    if (!names.insert(d.name).second) r.fail(f + ".name", "\"" + d.name + "\" appears twice");
    if (!devices[i].contains("containerEdits")) r.fail(f + ".containerEdits", "missing");
    d.edits = r.edits(devices[i]["containerEdits"], f + ".containerEdits");
    if (d.edits.empty() && d.edits.hooks.is_null()) {
      r.fail(f + ".containerEdits", "a device must edit something");
    }
    spec.devices.push_back(d);
  }
  if (doc.contains("containerEdits")) spec.edits = r.edits(doc["containerEdits"], "containerEdits");
  return spec;
}

json to_json(const Spec& spec) {
  json out{{"cdiVersion", spec.version}, {"kind", spec.kind}};
  json devices = json::array();
  for (const auto& d : spec.devices) {
    devices.push_back({{"name", d.name}, {"containerEdits", edits_json(d.edits)}});
  }
  out["devices"] = devices;
  if (!spec.edits.empty() || !spec.edits.hooks.is_null()) {
    out["containerEdits"] = edits_json(spec.edits);
  }
  return out;
}

std::optional<QualifiedName> parse_qualified_name(const std::string& text) {
  auto eq = text.find('=');
  if (text.empty() || text.front() == '/' || eq == std::string::npos) return std::nullopt;
  QualifiedName name{text.substr(0, eq), text.substr(eq + 1)};
  if (!valid_kind(name.kind) || !valid_device_name(name.name)) {
    throw Error("CDI device name \"" + text + "\" is not vendor/class=name", EINVAL,
                "e.g. --device fakegpu.example/gpu=0 (see `mrun cdi list`)");
  }
  return name;
}

ContainerEdits resolve(const std::vector<Spec>& specs, const std::vector<QualifiedName>& names) {
  ContainerEdits out;
  auto append = [&out](const ContainerEdits& e) {
    out.env.insert(out.env.end(), e.env.begin(), e.env.end());
    out.device_nodes.insert(out.device_nodes.end(), e.device_nodes.begin(), e.device_nodes.end());
    out.mounts.insert(out.mounts.end(), e.mounts.begin(), e.mounts.end());
  };
  std::set<const Spec*> spec_edits_done;
  std::set<std::string> done;
  for (const auto& name : names) {
    std::string qualified = name.kind + "=" + name.name;
    if (!done.insert(qualified).second) continue;
    // Specs are in priority order (later directories win, as in the CDI library), and
    // one kind may be spread over several files: the last spec naming the device wins.
    const Spec* spec = nullptr;
    const Device* device = nullptr;
    std::set<std::string> kinds;
    std::vector<std::string> known;
    for (auto s = specs.rbegin(); s != specs.rend(); ++s) {
      kinds.insert(s->kind);
      if (s->kind != name.kind) continue;
      for (const auto& d : s->devices) {
        known.push_back(d.name);
        if (device == nullptr && d.name == name.name) {
          spec = &*s;
          device = &d;
        }
      }
    }
    if (known.empty()) {
      throw Error(
          "CDI device " + qualified + ": no spec for kind " + name.kind +
              (kinds.empty() ? " (no CDI spec found)"
                             : " (known kinds: " + join({kinds.begin(), kinds.end()}, ", ") + ")"),
          ENOENT,
          "write one with `mrun cdi generate --spec-dir /etc/cdi`, or give its directory with "
          "--cdi-spec-dir");
    }
    if (device == nullptr) {
      std::sort(known.begin(), known.end());
      known.erase(std::unique(known.begin(), known.end()), known.end());
      throw Error("CDI device " + qualified + ": no device \"" + name.name + "\" of kind " +
                      name.kind + " (its devices: " + join(known, ", ") + ")",
                  ENOENT, "pick one of its devices, or regenerate the spec");
    }
    std::string where = "CDI device " + qualified + " (" + spec->file + ")";
    check_applicable(device->edits, where);
    if (spec_edits_done.insert(spec).second) {
      check_applicable(spec->edits, where);
      append(spec->edits);
    }
    append(device->edits);
  }
  return out;
}

}  // namespace mrun::cdi
