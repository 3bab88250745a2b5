#!/usr/bin/env python3
"""Checks roam's layering: every file of a layer includes only headers of its own layer and of
the layers below it, and no other layer's private headers.

  tools/check_layers.py --root DIR --layer NAME=DEP,DEP ... [--layer ...]

The graph (each layer's direct dependencies) comes from cmake/layers.cmake, which passes it
here; the layers below a dependency are allowed through it. A layer's files are
include/roam/<layer>/** (its public headers; detail/ holds what the layers above may use of
it), include/roam/<layer>.hpp (its umbrella header) and src/<layer>/** (its sources and
private headers). For each "#include" in them:
  - <roam/X/...> or "roam/X/..." (and <roam/X.hpp>) must name the file's own layer or one
    it may use;
  - a quoted relative include must stay in the file's own folder tree of src/<layer>/ or
    include/roam/<layer>/: src/<other>/ is another layer's private code.
Exits 1 listing every violation (file:line, what it includes, why), 0 when there is none.
Python 3 standard library only.
"""

import argparse
import os
import posixpath
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def parse_graph(entries):
    graph = {}
    for entry in entries:
        name, _, deps = entry.partition("=")
        graph[name] = [d for d in deps.split(",") if d]
    for name, deps in graph.items():
        for d in deps:
            if d not in graph:
                sys.exit("check_layers: layer '%s' depends on unknown layer '%s'" % (name, d))
    return graph


def allowed_layers(graph, layer):
    seen, todo = {layer}, list(graph[layer])
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(graph[d])
    return seen


def layer_of_header(path, layers):
    """The layer of an include path 'roam/X/...' or 'roam/X.hpp', or None."""
    parts = posixpath.normpath(path).split("/")
    if len(parts) < 2 or parts[0] != "roam":
        return None
    if len(parts) == 2 and parts[1].endswith(".hpp"):
        name = parts[1][:-4]
        return name if name in layers else "?" + name
    return parts[1] if parts[1] in layers else "?" + parts[1]


def files_of(root, layer):
    found = []
    for top in (os.path.join(root, "include", "roam", layer), os.path.join(root, "src", layer)):
        for folder, _, names in os.walk(top):
            found += [os.path.join(folder, n) for n in names
                      if n.endswith((".hpp", ".cpp", ".cu", ".cuh", ".h", ".cc", ".ipp", ".inl",
                                     ".tpp"))]
    umbrella = os.path.join(root, "include", "roam", layer + ".hpp")
    if os.path.isfile(umbrella):
        found.append(umbrella)
    return sorted(found)


def check(root, graph):
    problems = []
    src_root = os.path.realpath(os.path.join(root, "src"))
    include_root = os.path.realpath(os.path.join(root, "include", "roam"))
    for layer in graph:
        may_use = allowed_layers(graph, layer)
        own_include = os.path.join(include_root, layer)
        for path in files_of(root, layer):
            shown = os.path.relpath(path, root)
            # A public header may include only public headers (it is installed; src/ is not).
            public = os.path.realpath(path).startswith(include_root + os.sep)
            own_trees = [own_include] if public else [os.path.join(src_root, layer), own_include]
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    kind, target = match.groups()
                    where = "%s:%d: includes %s%s%s" % (shown, number, kind, target,
                                                        ">" if kind == "<" else '"')
                    header_layer = layer_of_header(target, graph)
                    if header_layer is not None:
                        if header_layer.startswith("?"):
                            problems.append("%s: roam/%s is no layer of cmake/layers.cmake"
                                            % (where, header_layer[1:]))
                        elif header_layer not in may_use:
                            problems.append("%s, a header of layer '%s', which layer '%s' may "
                                            "not use (it uses: %s)"
                                            % (where, header_layer, layer,
                                               ", ".join(sorted(may_use - {layer})) or "nothing"))
                        continue
                    if kind != '"':
                        continue
                    resolved = os.path.realpath(os.path.join(os.path.dirname(path), target))
                    if not os.path.exists(resolved):
                        continue  # a generated or system header found through the include path
                    if not any(resolved == t or resolved.startswith(t + os.sep)
                               for t in own_trees):
                        problems.append("%s, outside layer '%s'%s (another layer's private "
                                        "header: use its include/roam/<layer>/detail/ "
                                        "interface instead)"
                                        % (where, layer, "'s public headers" if public else ""))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the repository's root")
    parser.add_argument("--layer", action="append", default=[], metavar="NAME=DEPS")
    args = parser.parse_args()
    graph = parse_graph(args.layer)
    if not graph:
        sys.exit("check_layers: no --layer given")
    problems = check(args.root, graph)
    for p in problems:
        print("layering violation: " + p, file=sys.stderr)
    if problems:
        print("check_layers: %d violation(s); the allowed graph is in cmake/layers.cmake"
              % len(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
