// Safe reads from untrusted JSON records: a field of the wrong type reads as absent, never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sandprobe::core {

// The string at j[key], or "" when j is not an object, the key is absent or not a string.
std::string StringField(const nlohmann::json& j, std::string_view key);
// The boolean at j[key], or `fallback` when absent or not a boolean.
bool BoolField(const nlohmann::json& j, std::string_view key, bool fallback = false);
// The integer at j[key], or `fallback` when absent or not an integer (a float or a string is no
// integer: a time in ms, a count).
int64_t IntField(const nlohmann::json& j, std::string_view key, int64_t fallback = 0);

}  // namespace sandprobe::core
