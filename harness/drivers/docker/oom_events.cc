#include "drivers/docker/oom_events.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "drivers/docker/engine_client.h"

namespace sandprobe::drivers {

std::string OomEventsQuery(std::string_view id, double since_unix, double until_unix) {
  const nlohmann::json filters = {
      {"type", {"container"}}, {"event", {"oom"}}, {"container", {std::string(id)}}};
  return fmt::format("/events?since={:.3f}&until={:.3f}&filters={}", since_unix, until_unix,
                     QueryEscape(filters.dump()));
}

bool HasOomEvent(std::string_view events_body, std::string_view id) {
  if (id.empty()) return false;
  size_t pos = 0;
  while (pos < events_body.size()) {
    size_t end = events_body.find('\n', pos);
    if (end == std::string_view::npos) end = events_body.size();
    const auto e = nlohmann::json::parse(events_body.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (!e.is_object()) continue;
    // Engine API >= 1.22: Action and Actor.ID; older answers: status and id.
    const std::string action = e.contains("Action") && e["Action"].is_string()
                                   ? e["Action"].get<std::string>()
                                   : e.value("status", std::string());
    std::string who;
    if (auto a = e.find("Actor"); a != e.end() && a->is_object()) who = a->value("ID", "");
    if (who.empty() && e.contains("id") && e["id"].is_string()) who = e["id"].get<std::string>();
    if (action != "oom" || who.empty()) continue;
    if (who.starts_with(id) || id.starts_with(who)) return true;
  }
  return false;
}

}  // namespace sandprobe::drivers
