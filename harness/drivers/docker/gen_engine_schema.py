#!/usr/bin/env python3
# Generates engine_schema_table.inc: every field under the Docker Engine API's HostConfig
# (definitions.HostConfig = allOf [Resources, {...}]) and ContainerConfig (the create body's own
# fields: Env, WorkingDir, Entrypoint, Labels, ...), $ref and allOf resolved, recursively into
# arrays, objects and maps, with its JSON type, the first API version whose spec has it and the
# first later version whose spec no longer has it. Input: moby's frozen per-version specs
# api/docs/v1.NN.yaml, read from a moby git repository at one tag (git show), so the table says
# exactly which text it came from. Python 3 standard library + PyYAML (Debian: python3-yaml).
#
#   git clone --bare https://github.com/moby/moby moby.git
#   python3 harness/drivers/docker/gen_engine_schema.py --git-dir moby.git \
#       --ref docker-v29.7.2 --versions 1.41-1.55 > harness/drivers/docker/engine_schema_table.inc
#
# Path notation (relative to the root object): `A.B` a property, `A[]` an array's items, `A.*` the
# values of an object whose keys are free (additionalProperties). The type kept is the one of the
# oldest spec that has the field (the driver speaks the oldest, v1.41); a type that changes in a
# later spec is reported on stderr and makes the run fail, so nobody ships a table that hides it.
import argparse
import re
import subprocess
import sys

import yaml

# definitions.<root> -> the C++ table it becomes: HostConfig (the manifest's docker.hostConfig)
# and ContainerConfig (docker.config: Env, WorkingDir, Entrypoint, Labels, ...).
ROOTS = [("HostConfig", "kHostConfigFields"), ("ContainerConfig", "kContainerConfigFields")]


def load_spec(git_dir, ref, version):
    path = "api/docs/v%s.yaml" % version
    text = subprocess.run(["git", "--git-dir", git_dir, "show", "%s:%s" % (ref, path)],
                          check=True, capture_output=True, text=True).stdout
    return path, yaml.safe_load(text)


def resolve(spec, schema, seen=()):
    """$ref and allOf resolved into one schema dict (properties merged)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise SystemExit("recursive $ref %s" % name)
        merged = dict(resolve(spec, spec["definitions"][name], seen + (name,)))
        # Sibling keys beside $ref (description, x-nullable) apply too.
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        return merged
    if "allOf" in schema:
        out = {k: v for k, v in schema.items() if k != "allOf"}
        props = {}
        for part in schema["allOf"]:
            part = resolve(spec, part, seen)
            props.update(part.get("properties", {}))
            for k, v in part.items():
                if k != "properties":
                    out.setdefault(k, v)
        out["properties"] = props
        out.setdefault("type", "object")
        return out
    return schema


def kind_of(schema):
    t = schema.get("type")
    if t is None:
        if "properties" in schema or "additionalProperties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        return "any"
    return t


UNIT_PATTERNS = [
    (re.compile(r"\bbytes per second\b", re.I), "bytes per second"),
    (re.compile(r"\bbytes\b", re.I), "bytes"),
    (re.compile(r"\bmicroseconds\b", re.I), "microseconds"),
    (re.compile(r"\bnanoseconds\b", re.I), "nanoseconds"),
    (re.compile(r"units of 10<sup>-9</sup> CPUs", re.I), "10^-9 CPUs"),
]


def unit_of(schema):
    """A unit named in an integer field's description ("Memory limit in bytes.")."""
    if kind_of(schema) not in ("integer", "number"):
        return ""
    text = schema.get("description", "") or ""
    for pattern, unit in UNIT_PATTERNS:
        if pattern.search(text):
            return unit
    return ""


def walk(spec, schema, path, out):
    schema = resolve(spec, schema)
    kind = kind_of(schema)
    entry = {
        "type": kind,
        "format": schema.get("format", ""),
        "nullable": bool(schema.get("x-nullable", False)),
        "unit": unit_of(schema),
        "map": False,
    }
    out[path] = entry
    if kind == "array" and "items" in schema:
        walk(spec, schema["items"], path + "[]", out)
    elif kind == "object":
        for name, child in (schema.get("properties") or {}).items():
            walk(spec, child, (path + "." if path else "") + name, out)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            entry["map"] = True
            walk(spec, extra, path + ".*" if path else "*", out)
        elif extra is True:
            entry["map"] = True
            out[path + ".*" if path else "*"] = {"type": "any", "format": "", "nullable": True,
                                                  "unit": "", "map": False}


def version_key(v):
    major, minor = v.split(".")
    return int(major), int(minor)


def parse_versions(text):
    lo, hi = text.split("-")
    lo_k, hi_k = version_key(lo), version_key(hi)
    if lo_k[0] != hi_k[0]:
        raise SystemExit("--versions spans one major version, e.g. 1.41-1.55")
    return ["%d.%d" % (lo_k[0], m) for m in range(lo_k[1], hi_k[1] + 1)]


def cxx_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_table(specs, versions, root):
    """path -> entry over every version for definitions.<root>; and what the table cannot say."""
    per_version = {}
    for v in versions:
        spec = specs[v]
        fields = {}
        walk(spec, spec["definitions"][root], "", fields)
        del fields[""]  # the root object itself
        per_version[v] = fields

    table = {}
    changed = []
    for v in versions:
        for path, entry in per_version[v].items():
            if path not in table:
                table[path] = dict(entry, since=v, removed="")
            elif table[path]["type"] != entry["type"] and not table[path].get("changed"):
                table[path]["changed"] = True
                changed.append("%s.%s: %s in v%s, %s in v%s" % (root, path, table[path]["type"],
                                                                  table[path]["since"],
                                                                  entry["type"], v))
    for path, entry in table.items():
        later = [v for v in versions if version_key(v) > version_key(entry["since"])]
        gone = [v for v in later if path not in per_version[v]]
        if gone:
            entry["removed"] = gone[0]
            back = [v for v in later if version_key(v) > version_key(gone[0])
                    and path in per_version[v]]
            if back:
                changed.append("%s.%s: gone in v%s, back in v%s" % (root, path, gone[0], back[0]))
    return table, changed


def is_named(p):
    return not p.endswith("[]") and not p.endswith("*")


def main():
    ap = argparse.ArgumentParser(
        description="Engine API HostConfig and ContainerConfig fields from moby "
                    "api/docs/v1.NN.yaml -> C++ tables")
    ap.add_argument("--git-dir", required=True, help="a moby/moby git directory (bare is fine)")
    ap.add_argument("--ref", required=True, help="tag or commit, e.g. docker-v29.7.2")
    ap.add_argument("--versions", default="1.41-1.55", help="first-last API version")
    args = ap.parse_args()
    versions = parse_versions(args.versions)
    commit = subprocess.run(["git", "--git-dir", args.git_dir, "rev-parse", args.ref + "^{commit}"],
                            check=True, capture_output=True, text=True).stdout.strip()

    specs, paths = {}, []
    for v in versions:
        path, specs[v] = load_spec(args.git_dir, args.ref, v)
        paths.append(path)
    tables, changed = {}, []
    for root, _ in ROOTS:
        tables[root], more = build_table(specs, versions, root)
        changed += more
    if changed:
        sys.stderr.write("type or presence changes the table cannot express:\n  " +
                         "\n  ".join(changed) + "\n")
        return 1

    w = sys.stdout.write
    w("// GENERATED by harness/drivers/docker/gen_engine_schema.py: do not edit.\n")
    w("// Source: github.com/moby/moby at %s,\n" % args.ref)
    w("//   commit %s,\n" % commit)
    w("//   %s .. %s:\n" % (paths[0], paths[-1]))
    w("//   definitions.%s, $ref and allOf resolved.\n"
      % " and definitions.".join(root for root, _ in ROOTS))
    for root, _ in ROOTS:
        table = tables[root]
        named = sum(1 for p in table if is_named(p))
        newer = sum(1 for p, e in table.items() if e["since"] != versions[0] and is_named(p))
        removed = sum(1 for p, e in table.items() if e["removed"] and is_named(p))
        w("// %s: %d entries: %d named fields (%d of them added after v%s, %d gone from a later\n"
          "//   spec) and their `[]` list items and `.*` map values.\n"
          % (root, len(table), named, newer, versions[0], removed))
    w("// Regenerate:\n")
    w("//   git clone --bare https://github.com/moby/moby moby.git\n")
    w("//   python3 harness/drivers/docker/gen_engine_schema.py --git-dir moby.git --ref %s\n"
      % args.ref)
    w("//     --versions %s > harness/drivers/docker/engine_schema_table.inc  (one command)\n"
      % args.versions)
    w("// Columns: path (under the root object), JSON type, swagger format, unit named by the\n")
    w("// field's description, x-nullable, object with free keys (additionalProperties), first\n")
    w("// version whose spec has it, first later version whose spec no longer has it (\"\" = all).\n")
    w("// clang-format off\n")
    w("inline constexpr std::string_view kEngineSchemaSource =\n")
    w("    \"github.com/moby/moby %s %s .. %s\";\n" % (args.ref, paths[0], paths[-1]))
    w("inline constexpr std::string_view kEngineSchemaOldest = %s;\n" % cxx_string(versions[0]))
    w("inline constexpr std::string_view kEngineSchemaNewest = %s;\n" % cxx_string(versions[-1]))
    kinds = {"string": "kString", "integer": "kInteger", "number": "kNumber",
             "boolean": "kBoolean", "array": "kArray", "object": "kObject", "any": "kAny"}
    for root, variable in ROOTS:
        table = tables[root]
        w("inline constexpr EngineField %s[] = {\n" % variable)
        for path in sorted(table):
            e = table[path]
            w("    {%s, JsonType::%s, %s, %s, %s, %s, %s, %s},\n" % (
                cxx_string(path), kinds[e["type"]], cxx_string(e["format"]),
                cxx_string(e["unit"]), "true" if e["nullable"] else "false",
                "true" if e["map"] else "false", cxx_string(e["since"]),
                cxx_string(e["removed"])))
        w("};\n")
    w("// clang-format on\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
