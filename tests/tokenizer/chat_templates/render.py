#!/usr/bin/env python3
"""Reference renderer for Forge's chat template tests: Debian's python3-jinja2, configured the
way HF transformers' apply_chat_template configures it (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, loopcontrols and the {% generation %} tag; HF's tojson filter;
raise_exception and strftime_now globals).

Usage: render.py CASES.json > RESULTS.json
CASES.json: [{"template": str, "variables": {...}, "now": int}, ...]
RESULTS.json: one entry per case, {"ok": true, "output": str} or
              {"ok": false, "raised": bool, "type": str, "message": str}.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class GenerationTag(jinja2.ext.Extension):
    """HF's AssistantTracker without the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_environment(now):
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise RaisedByTemplate(message)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(now).strftime(format)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_environments = {}
_templates = {}


def render(case):
    try:
        now = case.get("now", 0)
        if now not in _environments:
            _environments[now] = make_environment(now)
        key = (now, case["template"])
        if key not in _templates:
            _templates[key] = _environments[now].from_string(case["template"])
        return {"ok": True, "output": _templates[key].render(**case.get("variables", {}))}
    except RaisedByTemplate as e:
        return {"ok": False, "raised": True, "type": "raise_exception", "message": str(e)}
    except Exception as e:  # any other Jinja or Python error the template causes
        return {"ok": False, "raised": False, "type": type(e).__name__, "message": str(e)}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    json.dump([render(c) for c in cases], sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
