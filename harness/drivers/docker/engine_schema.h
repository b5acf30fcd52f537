// The Docker Engine API's HostConfig and ContainerConfig as data: every field path, its JSON type
// and the API versions that have it, generated from moby's own swagger specs (api/docs/v1.NN.yaml,
// definitions.HostConfig = allOf [Resources, {...}], definitions.ContainerConfig) by
// gen_engine_schema.py into engine_schema_table.inc; that file's header names the tag, commit and
// versions it was read from.
//
// Paths are relative to the root object: `Mounts[].BindOptions.Propagation` (a property of each
// item of HostConfig's Mounts list), `Tmpfs.*` (each value of an object whose keys are free).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandprobe::drivers {

// The swagger `type` of a schema; kAny where the spec gives none.
enum class JsonType { kString, kInteger, kNumber, kBoolean, kArray, kObject, kAny };

struct EngineField {
  std::string_view path;    // e.g. "Ulimits[].Soft"
  JsonType type;            // the swagger type
  std::string_view format;  // swagger format ("int64"), "" when none
  std::string_view unit;    // the unit the field's description names ("bytes"), or ""
  bool nullable;            // x-nullable: JSON null is a value of its own
  bool map;                 // an object whose keys are free (additionalProperties: `path.*`)
  std::string_view since;   // first spec of the generated range that has it ("1.41": 1.41 or older)
  std::string_view removed;  // first later spec without it, "" when the newest still has it
};

#include "drivers/docker/engine_schema_table.inc"

// One root object of the Engine API a manifest passes through: its name in messages and its table.
struct EngineObject {
  std::string_view name;  // "HostConfig", "ContainerConfig"
  std::span<const EngineField> fields;
};
inline constexpr EngineObject kHostConfig{"HostConfig", kHostConfigFields};
inline constexpr EngineObject kContainerConfig{"ContainerConfig", kContainerConfigFields};

// The entry of `object` at `path`, or null.
const EngineField* FindField(const EngineObject& object, std::string_view path);

// The property names of the object at `parent` ("" = the root itself), in table order.
std::vector<std::string> Properties(const EngineObject& object, std::string_view parent);

// FindField / Properties of kHostConfig.
const EngineField* FindHostConfigField(std::string_view path);
std::vector<std::string> HostConfigProperties(std::string_view parent);

// "1.41" -> {1, 41}; nullopt for anything else.
std::optional<std::pair<int, int>> ParseApiVersion(std::string_view version);

// True when the Engine API at `version` has the field: since <= version < removed.
bool FieldInApi(const EngineField& field, std::string_view version);

// a < b as API versions ("1.9" < "1.41"); unparsable versions compare as 0.0.
bool ApiOlder(std::string_view a, std::string_view b);

}  // namespace sandprobe::drivers
