#!/usr/bin/python3
# Oracle for pre_tokenizer_test.cc: splits each corpus text with each preset's patterns using
# Debian's python3-regex, with the same semantics as Forge (each pattern splits every piece left by
# the previous one; matches and the gaps between them are both pieces; empty matches are skipped).
# Usage: pretokenizer_oracle.py IN.json OUT.json
import json
import sys

import regex


def split(patterns, text):
    pieces = [text]
    for pattern in patterns:
        compiled = regex.compile(pattern)
        out = []
        for piece in pieces:
            pos = 0
            for m in compiled.finditer(piece):
                if m.end() == m.start():
                    continue
                if m.start() > pos:
                    out.append(piece[pos:m.start()])
                out.append(m.group(0))
                pos = m.end()
            if pos < len(piece):
                out.append(piece[pos:])
        pieces = out
    return pieces


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        job = json.load(f)
    result = {}
    for preset in job["presets"]:
        result[preset["name"]] = [split(preset["patterns"], t) for t in job["corpus"]]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"regex_version": regex.__version__, "splits": result}, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
