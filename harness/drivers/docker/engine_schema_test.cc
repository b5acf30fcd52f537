// The HostConfig and ContainerConfig tables generated from the Engine API specs
// (engine_schema_table.inc, gen_engine_schema.py) against what the spec says for a few well-known
// fields.
#include "drivers/docker/engine_schema.h"

#include <gtest/gtest.h>

#include "drivers/docker/docker_section.h"

namespace sandprobe::drivers {
namespace {

// The generated table says what the spec says (Engine API v1.41 swagger: definitions.HostConfig
// and definitions.Resources).
TEST(EngineSchemaTest, TableAgreesWithTheSpecOnKnownFields) {
  struct Want {
    const char* path;
    JsonType type;
    const char* since;
  };
  for (const Want& w : {
           Want{"ReadonlyRootfs", JsonType::kBoolean, "1.41"},
           Want{"CapDrop", JsonType::kArray, "1.41"},
           Want{"CapDrop[]", JsonType::kString, "1.41"},
           Want{"Memory", JsonType::kInteger, "1.41"},  // from Resources, through allOf
           Want{"Tmpfs", JsonType::kObject, "1.41"},
           Want{"Tmpfs.*", JsonType::kString, "1.41"},
           Want{"Ulimits[].Soft", JsonType::kInteger, "1.41"},
           Want{"RestartPolicy.Name", JsonType::kString, "1.41"},  // through $ref
           Want{"Annotations", JsonType::kObject, "1.43"},
           Want{"Mounts[].VolumeOptions.Subpath", JsonType::kString, "1.45"},
       }) {
    SCOPED_TRACE(w.path);
    const EngineField* f = FindHostConfigField(w.path);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->type, w.type);
    EXPECT_EQ(f->since, w.since);
  }
  EXPECT_EQ(FindHostConfigField("Memory")->unit, "bytes");
  EXPECT_EQ(FindHostConfigField("Memory")->format, "int64");
  EXPECT_TRUE(FindHostConfigField("Tmpfs")->map);
  EXPECT_TRUE(FindHostConfigField("PidsLimit")->nullable);
  EXPECT_EQ(FindHostConfigField("KernelMemory")->removed, "1.42");
  EXPECT_EQ(FindHostConfigField("ReadOnlyRootfs"), nullptr);  // case-sensitive
  EXPECT_EQ(FindHostConfigField("Capabilities"), nullptr);    // gone before v1.41
  EXPECT_EQ(HostConfigProperties("Ulimits[]"), (std::vector<std::string>{"Hard", "Name", "Soft"}));
  EXPECT_EQ(kEngineSchemaOldest, "1.41");
}

// The ContainerConfig table (docker.config) from the same specs: definitions.ContainerConfig.
TEST(EngineSchemaTest, ContainerConfigTableAgreesWithTheSpec) {
  EXPECT_EQ(kContainerConfig.name, "ContainerConfig");
  EXPECT_EQ(FindField(kContainerConfig, "Env")->type, JsonType::kArray);
  EXPECT_EQ(FindField(kContainerConfig, "Env[]")->type, JsonType::kString);
  EXPECT_EQ(FindField(kContainerConfig, "Entrypoint[]")->type, JsonType::kString);
  EXPECT_EQ(FindField(kContainerConfig, "WorkingDir")->type, JsonType::kString);
  EXPECT_TRUE(FindField(kContainerConfig, "Labels")->map);
  EXPECT_EQ(FindField(kContainerConfig, "Labels.*")->type, JsonType::kString);
  EXPECT_TRUE(FindField(kContainerConfig, "NetworkDisabled")->nullable);
  EXPECT_EQ(FindField(kContainerConfig, "MacAddress")->removed, "1.52");
  EXPECT_EQ(FindField(kContainerConfig, "Healthcheck.StartInterval")->since, "1.44");
  EXPECT_EQ(FindField(kContainerConfig, "Memory"), nullptr);  // HostConfig's, not this one's
  EXPECT_EQ(FindField(kHostConfig, "Env"), nullptr);
  // Every field docker.config takes is in the spec's oldest version the driver speaks.
  for (std::string_view name : kConfigTaken) {
    const EngineField* f = FindField(kContainerConfig, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(FieldInApi(*f, "1.41")) << name;
  }
}

TEST(EngineSchemaTest, ApiVersionsCompareAsNumbers) {
  EXPECT_TRUE(ApiOlder("1.9", "1.41"));
  EXPECT_FALSE(ApiOlder("1.41", "1.41"));
  EXPECT_TRUE(ApiOlder("1.41", "1.100"));
  EXPECT_FALSE(ParseApiVersion("1."));
  EXPECT_FALSE(ParseApiVersion("v1.41"));
  const EngineField& km = *FindHostConfigField("KernelMemory");
  EXPECT_TRUE(FieldInApi(km, "1.41"));
  EXPECT_FALSE(FieldInApi(km, "1.42"));
  EXPECT_FALSE(FieldInApi(*FindHostConfigField("Annotations"), "1.42"));
}

}  // namespace
}  // namespace sandprobe::drivers
