// Secrets a manifest's own configuration hands its sandbox: environment variables with
// secret-looking names that a docker manifest's config.Env, a `docker run -e NAME=value` or a
// bubblewrap `--setenv NAME value` gives the sandboxed program. The runner looks for them like the
// planted canaries (drivers::Driver::GivenSecrets, placeholder canary.env_given) and redacts their
// values from every report; only names, lengths and sha256 prefixes are ever reported.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandprobe::drivers {

// True when `name` contains TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL (any case): the
// names cred.env-secrets lists as secret-like (probes/cred/env-secrets/probe.py, SECRET_LIKE).
bool SecretLookingName(std::string_view name);

// The NAME=value entries of `env` (Engine API Config.Env form) with a secret-looking name and a
// non-empty value, as {name, value}, in order.
std::vector<std::pair<std::string, std::string>> SecretLookingEntries(
    const std::vector<std::string>& env);

// What a command line gives the program it sandboxes, with a secret-looking name and a non-empty
// value: `docker`/`podman` `-e NAME=value`, `--env NAME=value`, `--env=NAME=value`, `-eNAME=value`
// and bubblewrap's `--setenv NAME value`. A bare `-e NAME` copies the CLI's own variable (the
// planted canaries reach the sandbox that way, and the probe finds them as planted ones).
std::vector<std::pair<std::string, std::string>> SecretsInArgv(
    const std::vector<std::string>& argv);

}  // namespace sandprobe::drivers
