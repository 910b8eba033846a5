#!/usr/bin/env python3
"""Lists function bodies longer than N lines (default 80) in the tracked C++/CUDA sources.

A brace-count scan, not a parser: string and character literals and // comments are blanked, a
'{' opens a function when the text before it ends in ')' (optionally followed by const, noexcept,
override, final, mutable or a trailing return type) and is not a control statement, a lambda or
an initializer; only the outermost such brace counts. Good enough to find the long ones.
Usage: scripts/long_functions.py [N]     (run from the repository root)
"""
import re
import subprocess
import sys

HEAD_IS_FUNCTION = re.compile(r"\)\s*(const|noexcept|override|final|mutable|->\s*[\w:<>,\s\*&]+)*\s*$")
CONTROL = re.compile(r"^(\}?\s*(else\s+)?if|for|while|switch|catch|do)\b")
NAME = re.compile(r"([~\w:]+)\s*\(")


def blank(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def scan(path, limit):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    hits, stack = [], []
    for i, raw in enumerate(lines):
        s = blank(raw)
        for j, ch in enumerate(s):
            if ch == "{":
                head, k = s[:j].strip(), i
                while not head and k > 0:
                    k -= 1
                    head = blank(lines[k]).strip()
                is_func = (bool(HEAD_IS_FUNCTION.search(head)) and not CONTROL.match(head)
                           and "=" not in head.split("(")[0] and not head.startswith("["))
                stack.append((is_func and not any(f for f, _, _ in stack), i, head))
            elif ch == "}" and stack:
                is_func, start, head = stack.pop()
                if is_func and i - start > limit:
                    context = "".join(lines[max(start - 3, 0):start]) + head
                    m = NAME.search(head) or NAME.search(context)
                    hits.append((i - start, path, start + 1, m.group(1) if m else head[:40]))
    return hits


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    files = subprocess.check_output(["git", "ls-files", "*.cpp", "*.hpp", "*.cu", "*.h"], text=True).split()
    hits = [h for f in files for h in scan(f, limit)]
    for n, path, line, name in sorted(hits, reverse=True):
        print(f"{n:4d} {path}:{line} {name}")
    print(f"{len(hits)} functions over {limit} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
