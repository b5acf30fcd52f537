#include "drivers/given_secrets.h"

#include <gtest/gtest.h>

namespace sandprobe::drivers {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(GivenSecrets, SecretLookingNames) {
  for (const char* name : {"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "github_token", "DB_PASSWORD",
                           "MYSQL_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS"}) {
    EXPECT_TRUE(SecretLookingName(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "LANG", "HOSTNAME", "TOKYO_TZ_"}) {
    EXPECT_FALSE(SecretLookingName(name)) << name;
  }
}

TEST(GivenSecrets, EnvEntriesNeedANameAndAValue) {
  EXPECT_EQ(SecretLookingEntries({"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=abc=def",
                                  "API_KEY=", "GITHUB_TOKEN", "=TOKEN", "CI_JOB_TOKEN=x"}),
            (Pairs{{"AWS_SECRET_ACCESS_KEY", "abc=def"}, {"CI_JOB_TOKEN", "x"}}));
}

TEST(GivenSecrets, CommandLines) {
  // docker run's four spellings; a bare -e NAME copies the CLI's own variable (not a value here).
  EXPECT_EQ(
      SecretsInArgv({"docker", "run", "-e", "OPENAI_API_KEY=sk1", "--env", "GITHUB_TOKEN=g",
                     "--env=ANTHROPIC_API_KEY=a", "-eCI_JOB_TOKEN=c", "-e", "AWS_SECRET_ACCESS_KEY",
                     "-e", "LANG=C", "img", "python3", "-c", "{script}"}),
      (Pairs{{"OPENAI_API_KEY", "sk1"},
             {"GITHUB_TOKEN", "g"},
             {"ANTHROPIC_API_KEY", "a"},
             {"CI_JOB_TOKEN", "c"}}));
  // bubblewrap --setenv NAME VALUE; -e means nothing to bwrap or python.
  EXPECT_EQ(
      SecretsInArgv({"bwrap", "--clearenv", "--setenv", "PATH", "/usr/bin", "--setenv",
                     "OPENAI_API_KEY", "sk2", "python3", "-e", "X_TOKEN=1", "-c", "{script}"}),
      (Pairs{{"OPENAI_API_KEY", "sk2"}}));
  EXPECT_TRUE(SecretsInArgv({"/usr/bin/podman", "run", "-e"}).empty());
}

}  // namespace
}  // namespace sandprobe::drivers
