#!/usr/bin/env python3
"""Validates report.json files against reports/schema/report.schema.json (JSON Schema 2020-12).

Usage: reports/schema/validate.py [report.json ...]   (default: reports/baselines/*.json)
Needs the `jsonschema` module (Debian: python3-jsonschema). Exit 0 when every file is valid.
"""
import json
import pathlib
import sys

import jsonschema

HERE = pathlib.Path(__file__).resolve().parent


def main(argv):
    schema = json.loads((HERE / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    paths = [pathlib.Path(p) for p in argv] or sorted((HERE.parent / "baselines").glob("*.json"))
    failed = 0
    for path in paths:
        errors = list(validator.iter_errors(json.loads(path.read_text(encoding="utf-8"))))
        for e in errors[:10]:
            print(f"{path}: {'/'.join(map(str, e.absolute_path))}: {e.message[:200]}")
        print(f"{path}: {'INVALID' if errors else 'ok'}")
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
