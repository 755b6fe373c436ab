#!/usr/bin/env python3
"""The layer rule of core/src and core/tools (docs/architecture.md, "Layers"), checked over every
`#include "..."` line: a folder includes its own headers, the internal headers of folders below
it, public headers (weft/*.h) and generated protobuf headers (*.pb-c.h), nothing else. Prints
one line per forbidden edge (file, line, the edge) as TAP and fails if there is any.

Usage: check_layers.py SOURCE_ROOT
"""
import os
import re
import sys

# Lowest first. A folder may include the headers of itself and of every folder before it.
LAYERS = ["base", "graph", "placement", "plugin", "exec", "session", "distributed", "train",
          "tools"]
# Headers outside core/src a layer may also use: tools reaches the benchmarks (bench/).
EXTRA = {"tools": ["bench"]}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of_file(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[:2] == ["core", "src"] and len(rel) > 3:
        return rel[2]
    if rel[:2] == ["core", "tools"]:
        return "tools"
    return None


def target_layer(root, src, inc):
    """The layer (or extra folder) the header `inc` included from `src` belongs to."""
    if inc.startswith("weft/") or inc.endswith(".pb-c.h"):
        return "public"
    here = os.path.dirname(src)
    candidates = [os.path.normpath(os.path.join(here, inc)),
                  os.path.normpath(os.path.join(root, "core", "src", inc)),
                  os.path.normpath(os.path.join(root, "bench", inc))]
    for path in candidates:
        if os.path.exists(path):
            rel = os.path.relpath(path, root).split(os.sep)
            if rel[:2] == ["core", "src"] and len(rel) > 3:
                return rel[2]
            if rel[:2] == ["core", "tools"]:
                return "tools"
            return rel[0]
    return "unknown"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = []
    for top in (os.path.join(root, "core", "src"), os.path.join(root, "core", "tools")):
        for dirpath, _, names in os.walk(top):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".c", ".h"))]
    bad = []
    for path in sorted(files):
        layer = layer_of_file(root, path)
        if layer not in LAYERS:
            bad.append("%s: folder '%s' is not in the layer list" %
                       (os.path.relpath(path, root), layer))
            continue
        allowed = set(LAYERS[:LAYERS.index(layer) + 1]) | set(EXTRA.get(layer, [])) | {"public"}
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = target_layer(root, path, m.group(1))
                if target not in allowed:
                    bad.append('%s:%d: #include "%s": %s may not include %s (%s)' %
                               (os.path.relpath(path, root), lineno, m.group(1), layer, target,
                                "above it" if target in LAYERS else "not a layer it may use"))
    print("1..1")
    if bad:
        for b in bad:
            print("# " + b)
        print("not ok 1 - %d forbidden #include edge(s) between layers %s" %
              (len(bad), " < ".join(LAYERS)))
        return 1
    print("ok 1 - every #include follows %s" % " < ".join(LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
