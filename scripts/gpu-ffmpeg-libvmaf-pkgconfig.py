#!/usr/bin/env python3
"""A stand-in for pkg-config, enough for FFmpeg's configure in
scripts/gpu-ffmpeg-libvmaf on a host without pkg-config: reads NAME.pc from
$PKG_CONFIG_PATH and answers --version, --exists (with version constraints
such as "ffnvcodec >= 12.0.16.1 ffnvcodec < 12.1"), --modversion, --cflags,
--cflags-only-I, --libs and --variable=NAME. --static and --print-errors are
accepted; Requires is not followed (the .pc files written there have none)."""

import os
import re
import shlex
import sys


def find_pc(name):
    for d in os.environ.get("PKG_CONFIG_PATH", "").split(":"):
        p = os.path.join(d, name + ".pc")
        if d and os.path.isfile(p):
            return p
    return None


def parse_pc(path):
    variables, fields = {}, {}

    def subst(v):
        return re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), ""), v)

    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^([\w.]+)\s*=\s*(.*)$", line)
            if m and ":" not in line.split("=", 1)[0]:
                variables[m.group(1)] = subst(m.group(2))
                continue
            m = re.match(r"^([\w.]+)\s*:\s*(.*)$", line)
            if m:
                fields[m.group(1)] = subst(m.group(2))
    return variables, fields


def vkey(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.\-]", v)]


def satisfied(have, op, want):
    a, b = vkey(have), vkey(want)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b, "==": a == b, "!=": a != b}[op]


def main(argv):
    opts = [a for a in argv if a.startswith("--")]
    words = [a for a in argv if not a.startswith("--")]
    if "--version" in opts:
        print("0.29.2")
        return 0
    # Packages with optional constraints: NAME [OP VERSION] ...
    pkgs, i = [], 0
    while i < len(words):
        name = words[i]
        if i + 2 < len(words) and words[i + 1] in ("<", "<=", ">", ">=", "=", "==", "!="):
            pkgs.append((name, words[i + 1], words[i + 2]))
            i += 3
        else:
            pkgs.append((name, None, None))
            i += 1
    loaded = []
    for name, op, want in pkgs:
        path = find_pc(name)
        if not path:
            if "--print-errors" in opts or "--exists" not in opts:
                print(f"Package {name} was not found in the pkg-config search path.", file=sys.stderr)
            return 1
        variables, fields = parse_pc(path)
        if op and not satisfied(fields.get("Version", "0"), op, want):
            if "--print-errors" in opts:
                print(f"Requested '{name} {op} {want}' but version of {name} is {fields.get('Version')}",
                      file=sys.stderr)
            return 1
        loaded.append((variables, fields))
    out = []
    for variables, fields in loaded:
        for o in opts:
            if o.startswith("--variable="):
                out.append(variables.get(o.split("=", 1)[1], ""))
            elif o == "--modversion":
                out.append(fields.get("Version", ""))
            elif o == "--cflags":
                out.append(fields.get("Cflags", ""))
            elif o == "--cflags-only-I":
                out.append(" ".join(f for f in shlex.split(fields.get("Cflags", "")) if f.startswith("-I")))
            elif o == "--libs":
                out.append(fields.get("Libs", "") + " " + fields.get("Libs.private", ""))
    if out:
        print(" ".join(x for x in out if x).strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
