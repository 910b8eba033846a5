#!/usr/bin/env python3
"""Validates every line of shardscope trace files against docs/trace-schema.json.

Usage: validate_trace_schema.py SCHEMA PATH...  (PATH: a rank-<R>.jsonl file or a directory of them)
Uses Debian's python3-jsonschema (a real JSON Schema 2020-12 validator). Prints one line per
invalid line (FILE:LINE: the validator's message) and a summary; exits 1 when any line is invalid,
2 on bad usage or a missing validator.
"""
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    print("validate_trace_schema: python3-jsonschema is missing (scripts/deps.sh installs it)", file=sys.stderr)
    sys.exit(2)


def files_of(path):
    p = pathlib.Path(path)
    if p.is_dir():
        return sorted(p.glob("rank-*.jsonl"))
    return [p]


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = lines = files = 0
    types = {}
    for path in sys.argv[2:]:
        found = files_of(path)
        if not found:
            print(f"{path}: no rank-<R>.jsonl files", file=sys.stderr)
            return 2
        for f in found:
            files += 1
            with open(f, encoding="utf-8") as stream:
                for number, text in enumerate(stream, 1):
                    if not text.strip():
                        continue
                    lines += 1
                    line = json.loads(text)
                    types[line.get("type", "header" if "format" in line else "?")] = (
                        types.get(line.get("type", "header" if "format" in line else "?"), 0) + 1)
                    error = jsonschema.exceptions.best_match(validator.iter_errors(line))
                    if error is not None:
                        bad += 1
                        if bad <= 20:
                            where = "/".join(str(p) for p in error.absolute_path)
                            print(f"{f}:{number}: {where or '(line)'}: {error.message[:300]}")
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(types.items()))
    print(f"schema: {lines} lines in {files} files, {bad} invalid ({kinds})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
