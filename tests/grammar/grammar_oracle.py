#!/usr/bin/env python3
"""Independent answers for the grammar tests: Python's re/regex and python3-jsonschema.

usage: grammar_oracle.py JOB.json OUT.json

JOB holds any of:
  "fullmatch": [{"regex": R, "strings": [S, ...]}, ...]   -> booleans: regex.fullmatch(R, S)
  "search":    [{"regex": R, "strings": [S, ...]}, ...]   -> booleans: re.search(R, S), as
                                                             JSON Schema's "pattern" applies it
  "jsonschema": [{"schema": SCHEMA, "docs": [TEXT, ...]}, ...]
                -> per doc {"json": parsed?, "valid": valid against SCHEMA?, "error": why not}
OUT holds the same keys with the answers, plus the versions used.
"""
import datetime
import importlib.metadata
import json
import re
import sys

import jsonschema
import regex

# RFC 3339 full-time / date-time (JSON Schema's "time" and "date-time"); jsonschema checks them
# only with an optional package, so they are checked here.
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))")


def _check_time(text):
    m = _TIME.fullmatch(text)
    if not m:
        return False
    hh, mm, ss = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if hh > 23 or mm > 59 or ss > 60:
        return False
    if m.group(6) is not None and (int(m.group(6)) > 23 or int(m.group(7)) > 59):
        return False
    return True


def _check_date_time(text):
    if len(text) < 11 or text[10] not in "Tt":
        return False
    try:
        datetime.date.fromisoformat(text[:10])
    except ValueError:
        return False
    return len(text[:10]) == 10 and _check_time(text[11:])


def _format_checker():
    checker = jsonschema.FormatChecker()
    checker.checks("time")(_check_time)
    checker.checks("date-time")(_check_date_time)
    return checker


def _validate(schema, docs):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=_format_checker())
    out = []
    for text in docs:
        try:
            value = json.loads(text)
        except ValueError as e:
            out.append({"json": False, "valid": False, "error": "json: %s" % e})
            continue
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        out.append({"json": True, "valid": not errors,
                    "error": errors[0].message[:300] if errors else ""})
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    out = {"versions": {"python": sys.version.split()[0], "regex": regex.__version__,
                        "jsonschema": importlib.metadata.version("jsonschema")}}
    if "fullmatch" in job:
        out["fullmatch"] = [[regex.fullmatch(case["regex"], s) is not None for s in case["strings"]]
                            for case in job["fullmatch"]]
    if "search" in job:
        out["search"] = [[re.search(case["regex"], s) is not None for s in case["strings"]]
                         for case in job["search"]]
    if "jsonschema" in job:
        out["jsonschema"] = [_validate(case["schema"], case["docs"]) for case in job["jsonschema"]]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
