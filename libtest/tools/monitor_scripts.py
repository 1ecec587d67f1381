#!/usr/bin/env python3
"""Summarise a redis-cli MONITOR log: which commands a library sent (and
which its scripts called), and the
Lua scripts it ran (the SHA1 of every script body sent with EVAL, EVAL_RO or
SCRIPT LOAD, and every SHA1 sent with EVALSHA / EVALSHA_RO).

usage: monitor_scripts.py MONITOR_LOG [SCRIPT_DIR]

With SCRIPT_DIR, each script body is written there as <sha1>.lua, byte for
byte as the server received it. Used to fingerprint the scripts of the
libraries in libtest (see libtest/testdata/scripts/README.md).
"""

import collections
import hashlib
import os
import sys

# Commands whose first argument names a subcommand worth counting apart.
WITH_SUBCOMMAND = {"SCRIPT", "CLIENT", "CONFIG", "OBJECT", "XINFO", "XGROUP", "MEMORY", "FUNCTION", "COMMAND", "CLUSTER"}

ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b", '"': b'"', "\\": b"\\"}


def is_from_script(line):
    """Reports whether a MONITOR line is a command that a script called
    (the server marks those "[db lua]" instead of "[db host:port]")."""
    end = line.find("] ")
    return end >= 0 and line[:end].endswith(" lua")


def parse_args(line):
    """Returns the arguments of one MONITOR line as bytes (the server quotes
    each argument and escapes \\n, \\r, \\t, \\a, \\b, \\", \\\\ and \\xHH)."""
    start = line.find("] ")
    if start < 0:
        return []
    s = line[start + 2 :]
    args, i = [], 0
    while i < len(s):
        if s[i] != '"':
            i += 1
            continue
        i += 1
        buf = bytearray()
        while i < len(s) and s[i] != '"':
            c = s[i]
            if c == "\\" and i + 1 < len(s):
                n = s[i + 1]
                if n == "x" and i + 3 < len(s):
                    buf += bytes([int(s[i + 2 : i + 4], 16)])
                    i += 4
                    continue
                buf += ESCAPES.get(n, n.encode())
                i += 2
                continue
            buf += c.encode()
            i += 1
        args.append(bytes(buf))
        i += 1
    return args


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out_dir = sys.argv[2] if len(sys.argv) == 3 else None
    counts = collections.Counter()  # commands the clients sent
    in_scripts = collections.Counter()  # commands the scripts called
    bodies = {}  # sha1 -> body
    how = collections.defaultdict(collections.Counter)  # sha1 -> how it was sent
    with open(sys.argv[1], encoding="latin-1") as f:
        for line in f:
            args = parse_args(line.rstrip("\n"))
            if not args:
                continue
            name = args[0].decode("latin-1").upper()
            if name in WITH_SUBCOMMAND and len(args) > 1:
                name += " " + args[1].decode("latin-1").upper()
            if is_from_script(line):
                in_scripts[name] += 1
                continue
            counts[name] += 1
            body = None
            if name in ("EVAL", "EVAL_RO") and len(args) > 1:
                body = args[1]
            elif name == "SCRIPT LOAD" and len(args) > 2:
                body = args[2]
            if body is not None:
                sha = hashlib.sha1(body).hexdigest()
                bodies[sha] = body
                how[sha][name] += 1
            elif name in ("EVALSHA", "EVALSHA_RO") and len(args) > 1:
                how[args[1].decode("latin-1").lower()][name] += 1
    print("commands:")
    for name, n in sorted(counts.items()):
        print(f"  {name} {n}")
    print("called from scripts:")
    for name, n in sorted(in_scripts.items()):
        print(f"  {name} {n}")
    print("scripts:")
    for sha, ways in sorted(how.items()):
        body = bodies.get(sha)
        first = body.strip().split(b"\n")[0][:70].decode("latin-1") if body else "(body never sent)"
        sent = ", ".join(f"{k} x{v}" for k, v in sorted(ways.items()))
        size = len(body) if body else 0
        print(f"  {sha} {size:6d} B  [{sent}]  {first}")
        if out_dir and body is not None:
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, sha + ".lua"), "wb") as f:
                f.write(body)


if __name__ == "__main__":
    main()
