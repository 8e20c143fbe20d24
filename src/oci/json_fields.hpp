// Reading config.json's fields, one way for every part of the conversion: a field of
// the wrong type, an integer out of range or a missing object fails with one line that
// names the field ("config.json: process.user.uid: ..."), exit 125.
#pragma once

#include <cerrno>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"

namespace mrun::oci {

using nlohmann::json;

inline Error bad(const std::string& field, const std::string& what) {
  return Error("config.json: " + field + ": " + what, EINVAL);
}

template <typename T>
struct vector_of {
  using type = void;
};
template <typename U>
struct vector_of<std::vector<U>> {
  using type = U;
};

// An integer field must hold an integer that fits: nlohmann converts any number to
// any arithmetic type with a plain cast, so 4294967296 would be uid 0, a gid of -1
// 4294967295 and a timeout of 1.5 one second (tests/fuzz/regressions/config/).
// Anything but a number is left to get<T>() to report as a wrong type.
template <typename T>
void check_integer(const json& v, const std::string& field) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if constexpr (std::is_unsigned_v<T>) {
      // nlohmann would wrap -1 round to 4294967295: a uid that nobody asked for.
      if (!v.is_number_unsigned()) throw bad(field, "must be a non-negative integer");
    }
    if (!v.is_number()) return;
    if (!v.is_number_integer()) throw bad(field, "must be an integer, not " + v.dump());
    bool fits = v.is_number_unsigned() ? std::in_range<T>(v.get<std::uint64_t>())
                                       : std::in_range<T>(v.get<std::int64_t>());
    if (!fits) throw bad(field, v.dump() + " is out of range");
  }
}

// Reads j[key] into out when present; a wrong type names the field.
template <typename T>
void get(const json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  check_integer<T>(*it, where + key);
  if constexpr (!std::is_void_v<typename vector_of<T>::type>) {
    if (it->is_array()) {
      for (std::size_t i = 0; i < it->size(); ++i) {
        check_integer<typename vector_of<T>::type>((*it)[i],
                                                   where + key + "[" + std::to_string(i) + "]");
      }
    }
  }
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    throw bad(where + key, "wrong type (" + std::string(it->type_name()) + ")");
  }
}
template <typename T>
void get(const json& j, const char* key, std::optional<T>& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  T value{};
  get(j, key, value, where);
  out = std::move(value);
}

inline const json& object_at(const json& j, const std::string& where) {
  if (!j.is_object()) throw bad(where, "must be an object");
  return j;
}

}  // namespace mrun::oci
