"""The CI templates (ci/templates/*): each passes a schema of its CI system kept by others, each
shell block parses, and each job, run with a stand-in sandprobe that exits 0, 1, 2 or 3, fails
exactly on 1, 2 and 3 while the reports are kept and matrix.md is still posted.

Validators (validators/README.md): @action-validator/core (SchemaStore's github-workflow schema)
for GitHub and Forgejo Actions, GitLab's own CI schema (as gitlab-ci-local ships it) with
python3-jsonschema for GitLab. Both come from the npm registry at test time, pinned by version
and sha512, cached in $SANDPROBE_VALIDATORS_CACHE (default build/ci-template-validators). No
network is needed once cached; without npm or the registry the test fails, it never skips.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import unittest

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("SANDPROBE_VALIDATORS_CACHE") or os.path.join(
    ROOT, "build", "ci-template-validators")
GITHUB = os.path.join(HERE, "github", "sandprobe.yml")
FORGEJO = os.path.join(HERE, "forgejo", "sandprobe.yaml")
GITLAB = os.path.join(HERE, "gitlab", "sandprobe.gitlab-ci.yml")

# name -> (npm spec, dist.integrity): the registry's sha512 of the tarball.
VALIDATORS = {
    "action-validator": ("@action-validator/core@0.6.0",
                         "sha512-tPglwCr8Mm8SWzwnVewwFmqRx91F0WvMsM0BRAqH4CLalyGndm53Xvp+UcUSzswpk1wkjIDYI7RyEhWMLyPkig=="),
    "gitlab-ci-local": ("gitlab-ci-local@4.65.1",
                        "sha512-5OzoIsnF7hZuss0qL0GjGnfLUTtvDhgmfxC5x6mSgSic7X+rKEqfajmf9rZI2mTdf09goqJpIKlPcdaK0KSfdQ=="),
}


def fetch(name):
    """The unpacked npm package `name` (its package/ folder), fetched once with `npm pack`."""
    spec, integrity = VALIDATORS[name]
    dest = os.path.join(CACHE, name)
    if os.path.exists(os.path.join(dest, ".integrity")):
        with open(os.path.join(dest, ".integrity")) as f:
            if f.read() == integrity:
                return os.path.join(dest, "package")
    if shutil.which("npm") is None:
        raise AssertionError("npm is not installed (ci/bootstrap installs it): the CI templates "
                             "cannot be validated")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    r = subprocess.run(["npm", "pack", spec, "--pack-destination", dest, "--silent"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError("npm pack %s failed: %s" % (spec, r.stderr[-2000:]))
    tarball = os.path.join(dest, r.stdout.strip().splitlines()[-1])
    with open(tarball, "rb") as f:
        digest = "sha512-" + base64.b64encode(hashlib.sha512(f.read()).digest()).decode()
    if digest != integrity:
        raise AssertionError("%s: sha512 %s, pinned %s" % (spec, digest, integrity))
    with tarfile.open(tarball) as t:
        t.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(dest)
    with open(os.path.join(dest, ".integrity"), "w") as f:
        f.write(integrity)
    return os.path.join(dest, "package")


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2 booleans (true/false only): YAML 1.1 would read a workflow's `on:` key as True."""


Yaml12Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                                   re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                   list("tTfF"))


def load(path_or_text):
    text = path_or_text
    if os.path.exists(path_or_text):
        with open(path_or_text) as f:
            text = f.read()
    return yaml.load(text, Loader=Yaml12Loader)


def validate_workflows(paths):
    """(exit code, {file: [errors]}) of action-validator on workflow files."""
    module = fetch("action-validator")
    r = subprocess.run(["node", os.path.join(HERE, "validators", "validate_workflow.cjs"),
                        module] + list(paths), capture_output=True, text=True, timeout=120)
    out = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        out[d["file"]] = d["errors"]
    if len(out) != len(paths):
        raise AssertionError("validator answered for %d of %d files: %s" % (
            len(out), len(paths), r.stderr[-2000:]))
    return r.returncode, out


def gitlab_validator():
    package = fetch("gitlab-ci-local")
    r = subprocess.run(["node", os.path.join(HERE, "validators", "dump_gitlab_schema.mjs"),
                        os.path.join(package, "src", "schema", "schema.js")],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("could not read GitLab's schema: %s" % r.stderr[-2000:])
    schema = json.loads(r.stdout)
    if schema.get("$id") != "https://gitlab.com/.gitlab-ci.yml":
        raise AssertionError("not GitLab's CI schema: $id %r" % schema.get("$id"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def gitlab_errors(validator, doc):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:200])
            for e in validator.iter_errors(doc)]


class Schemas(unittest.TestCase):
    def test_github_and_forgejo_pass_the_workflow_schema(self):
        code, errors = validate_workflows([GITHUB, FORGEJO])
        self.assertEqual(errors, {GITHUB: [], FORGEJO: []})
        self.assertEqual(code, 0)

    def test_a_broken_workflow_is_refused(self):
        with open(GITHUB) as f:
            text = f.read()
        broken = {"runs-on": text.replace("runs-on:", "runs_on:"),
                  "step key": text.replace("      - name: Run the suite", "      - nmae: Run the suite"),
                  "event": text.replace("  pull_request:\n", "  pull_requests:\n", 1),
                  "permission": text.replace("pull-requests: write", "pull-requests: sometimes"),
                  "with": text.replace("if-no-files-found: warn", "if-no-files-found: [warn]")}
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, body in broken.items():
                self.assertNotEqual(body, text, name)
                paths.append(os.path.join(d, name + ".yml"))
                with open(paths[-1], "w") as f:
                    f.write(body)
            code, errors = validate_workflows(paths)
        self.assertEqual(code, 1)
        for path in paths:
            self.assertTrue(errors[path], "%s was accepted" % path)
        self.assertIn("runs_on", json.dumps(errors[paths[0]]))

    def test_gitlab_passes_gitlabs_schema_and_a_broken_copy_does_not(self):
        v = gitlab_validator()
        doc = load(GITLAB)
        self.assertEqual(gitlab_errors(v, doc), [])
        bad = load(GITLAB)
        bad["sandprobe"]["artifacts"]["when"] = "sometimes"
        bad["sandprobe"]["scirpt"] = bad["sandprobe"].pop("script")
        errors = gitlab_errors(v, bad)
        self.assertTrue(any("sometimes" in e for e in errors), errors)
        self.assertTrue(any("scirpt" in e for e in errors), errors)


def shell_blocks(path):
    """[(name, script)] of every shell block a template runs."""
    doc = load(path)
    if path == GITLAB:
        job = doc["sandprobe"]
        return [("before_script + script", "\n".join(job["before_script"] + job["script"]))]
    blocks = []
    for job in doc["jobs"].values():
        blocks += [(s.get("name", "?"), s["run"]) for s in job["steps"] if "run" in s]
    return blocks


class Shell(unittest.TestCase):
    def test_every_shell_block_parses(self):
        for path in (GITHUB, FORGEJO, GITLAB):
            blocks = shell_blocks(path)
            self.assertGreaterEqual(len(blocks), 1 if path == GITLAB else 3, path)
            for name, script in blocks:
                r = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, "%s: %s: %s" % (path, name, r.stderr))


# --- the jobs, run with stand-ins ------------------------------------------------------------

STAND_INS = {
    # sandprobe: --version, or run: writes the reports (none on a setup error) and exits $FAKE_EXIT
    "sandprobe": r'''#!/bin/bash
echo "sandprobe $*" >> "$CALLS"
[ "$1" = --version ] && { echo "sandprobe 0.1.0"; exit 0; }
out=reports/out
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
if [ "$FAKE_EXIT" != 3 ]; then
  mkdir -p "$out"; printf '# sandprobe run fake\n\nexit %s\n' "$FAKE_EXIT" > "$out/matrix.md"
  echo '<testsuites/>' > "$out/junit.xml"
fi
exit "$FAKE_EXIT"
''',
    # gh, curl, apt-get: record the call (curl: and the body it would send); never any network
    "gh": '#!/bin/bash\necho "gh $*" >> "$CALLS"\n',
    "apt-get": '#!/bin/bash\necho "apt-get $*" >> "$CALLS"\n',
    "curl": r'''#!/bin/bash
echo "curl $*" >> "$CALLS"
for a in "$@"; do
  case "$a" in @*) cp "${a#@}" "$CALLS.body" ;; body@*) cp "${a#body@}" "$CALLS.body" ;; esac
done
''',
}


def stand_in_bin(d):
    bin_dir = os.path.join(d, "bin")
    os.makedirs(bin_dir)
    for name, body in STAND_INS.items():
        path = os.path.join(bin_dir, name)
        with open(path, "w") as f:
            f.write(body)
        os.chmod(path, stat.S_IRWXU)
    return bin_dir


def expression(text, ctx):
    """A GitHub/Forgejo expression of these templates, evaluated with ctx (name -> value).
    Raises on any term it does not know, so a changed template makes this test fail, not pass."""
    py = text.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"hashFiles\('([^']*)'\)",
                lambda m: repr("h" if os.path.exists(os.path.join(ctx["cwd"], m.group(1))) else ""),
                py)
    py = py.replace("always()", "True")
    for name, value in ctx.items():
        py = re.sub(r"(?<![\w.])%s(?![\w.])" % re.escape(name), repr(value), py)
    leftover = re.sub(r"'[^']*'|\b(and|or|not|True|False)\b|==|!=|[()\s]|\d+", "", py)
    if leftover:
        raise AssertionError("unknown term in %r: %r" % (text, leftover))
    return eval(py, {"__builtins__": {}})  # only literals and operators are left


def substitute(value, ctx):
    def one(m):
        v = expression(m.group(1).strip(), ctx)
        return "" if v is None else str(v)
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def run_actions_job(path, event, exit_code, d):
    """Runs the template's only job as the runner would: steps in order, `run:` with bash -e, a
    step's `if:` evaluated, `uses:` steps recorded. Returns (job failed, steps that ran)."""
    job = next(iter(load(path)["jobs"].values()))
    cwd = os.path.join(d, "checkout")
    os.makedirs(cwd)
    ctx = {"cwd": cwd, "github.event_name": event, "github.event.pull_request.number":
           7 if event == "pull_request" else "", "github.token": "t0ken",
           "github.server_url": "http://forge.invalid", "github.repository": "team/repo",
           "vars.SANDPROBE_DEB_URL": "http://packages.invalid/sandprobe.deb",
           "vars.SANDPROBE_ISSUE": "", "secrets.SANDPROBE_FORGEJO_TOKEN": "f0rgejo"}
    env = dict(os.environ, PATH=stand_in_bin(d) + ":" + os.environ["PATH"],
               CALLS=os.path.join(d, "calls"), FAKE_EXIT=str(exit_code),
               GITHUB_REPOSITORY="team/repo")
    env.update({k: substitute(v, ctx) for k, v in job.get("env", {}).items()})
    failed, ran = False, []
    for step in job["steps"]:
        cond = step.get("if")
        run_it = (not failed) if cond is None else (
            expression(cond, ctx) and ("always()" in cond or not failed))
        if not run_it:
            continue
        ran.append(step.get("name", step.get("uses")))
        if "run" in step:
            step_env = dict(env, **{k: substitute(v, ctx) for k, v in step.get("env", {}).items()})
            r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=step_env,
                               capture_output=True, text=True, timeout=60)
            failed = failed or r.returncode != 0
    return failed, ran


def calls(d):
    with open(os.path.join(d, "calls")) as f:
        return f.read()


class Jobs(unittest.TestCase):
    def check_actions(self, path, comment):
        for code in (0, 1, 2, 3):
            with self.subTest(exit=code), tempfile.TemporaryDirectory() as d:
                failed, ran = run_actions_job(path, "pull_request", code, d)
                self.assertEqual(failed, code != 0, ran)
                self.assertIn("Upload the reports", ran)
                log = calls(d)
                self.assertIn("apt-get install -y -qq /tmp/sandprobe.deb", log)
                self.assertIn("sandprobe run --suite /usr/share/sandprobe/suites/default.yaml "
                              "--sandbox sandbox/sandprobe-manifest.yaml --out reports/out", log)
                posted = comment in log
                self.assertEqual(posted, code != 3, log)  # a setup error leaves no matrix.md
                if posted and path == FORGEJO:
                    with open(os.path.join(d, "calls.body")) as f:
                        body = json.load(f)["body"]
                    self.assertEqual(body, "# sandprobe run fake\n\nexit %d\n" % code)
        with tempfile.TemporaryDirectory() as d:  # a push: reports kept, nothing to comment on
            failed, ran = run_actions_job(path, "push", 1, d)
            self.assertTrue(failed)
            self.assertIn("Upload the reports", ran)
            self.assertNotIn(comment, calls(d))

    def test_github_fails_on_1_2_3_and_still_uploads_and_comments(self):
        self.check_actions(GITHUB, "gh pr comment 7 --repo team/repo --body-file "
                                   "reports/out/matrix.md")

    def test_forgejo_fails_on_1_2_3_and_still_uploads_and_comments(self):
        self.check_actions(FORGEJO, "http://forge.invalid/api/v1/repos/team/repo/issues/7/comments")

    def test_gitlab_fails_on_1_2_3_after_posting_the_note(self):
        doc = load(GITLAB)
        job = doc["sandprobe"]
        self.assertEqual(job["artifacts"]["when"], "always")
        self.assertEqual(job["artifacts"]["reports"]["junit"], "reports/out/junit.xml")
        self.assertNotIn("allow_failure", job)
        script = "\n".join(job["before_script"] + job["script"])
        for code in (0, 1, 2, 3):
            with self.subTest(exit=code), tempfile.TemporaryDirectory() as d:
                cwd = os.path.join(d, "checkout")
                os.makedirs(cwd)
                env = dict(os.environ, PATH=stand_in_bin(d) + ":" + os.environ["PATH"],
                           CALLS=os.path.join(d, "calls"), FAKE_EXIT=str(code),
                           CI_MERGE_REQUEST_IID="5", CI_PROJECT_ID="42",
                           CI_API_V4_URL="http://gitlab.invalid/api/v4",
                           SANDPROBE_GITLAB_TOKEN="g1tlab",
                           SANDPROBE_DEB_URL="http://packages.invalid/sandprobe.deb",
                           **{k: str(v) for k, v in job["variables"].items()})
                # GitLab's bash shell runs the job's lines with errexit and pipefail
                r = subprocess.run(["bash", "-c", "set -eo pipefail\n" + script], cwd=cwd,
                                   env=env, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, code, r.stderr)
                log = calls(d)
                note = ("http://gitlab.invalid/api/v4/projects/42/merge_requests/5/notes" in log)
                self.assertEqual(note, code != 3, log)
                if note:
                    self.assertIn("--data-urlencode body@reports/out/matrix.md", log)
                    with open(os.path.join(d, "calls.body")) as f:
                        self.assertEqual(f.read(), "# sandprobe run fake\n\nexit %d\n" % code)


if __name__ == "__main__":
    unittest.main()
