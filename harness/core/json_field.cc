#include "core/json_field.h"

namespace sandprobe::core {

std::string StringField(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

bool BoolField(const nlohmann::json& j, std::string_view key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

int64_t IntField(const nlohmann::json& j, std::string_view key, int64_t fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  return it->get<int64_t>();
}

}  // namespace sandprobe::core
