#!/usr/bin/env python3
"""The layering check must catch what it exists for. On a scratch copy of include/ and src/:
  1. the tree as it is passes;
  2. an upward include (the transport including the load balancer's header) fails, naming
     the file, the header and the layers;
  3. a private header of another layer (mobile including src/core/scheduler.hpp) fails;
  4. a public header including its own layer's private header fails (it would not install);
  5. an include through '..' is judged by where it leads;
  6. a header of no declared layer fails.
Usage: check_layers_test.py ROOT CHECKER --layer NAME=DEPS ...
"""

import os
import shutil
import subprocess
import sys
import tempfile


def run(checker, root, graph):
    result = subprocess.run([sys.executable, checker, "--root", root] + graph,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, check=False)
    return result.returncode, result.stderr


def inject(root, relative, line):
    path = os.path.join(root, relative)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(line + "\n" + text)
    return lambda: open(path, "w", encoding="utf-8").write(text)


def expect(condition, what, output):
    if not condition:
        sys.exit("check_layers_test: %s\n%s" % (what, output))
    print("ok: " + what)


def main():
    source_root, checker, graph = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as scratch:
        for folder in ("include", "src"):
            shutil.copytree(os.path.join(source_root, folder), os.path.join(scratch, folder))

        rc, out = run(checker, scratch, graph)
        expect(rc == 0, "the tree as it is passes", out)

        # (file, injected line, texts the report must contain, what it shows)
        cases = [
            ("src/transport/wire.cpp", "#include <roam/lb/policy.hpp>",
             ["src/transport/wire.cpp:1: includes <roam/lb/policy.hpp>",
              "layer 'lb', which layer 'transport' may not use"],
             "an upward include (transport -> lb) fails"),
            ("src/mobile/directory.cpp", '#include "../core/scheduler.hpp"',
             ["src/mobile/directory.cpp:1", "private header"],
             "another layer's private header fails"),
            ("include/roam/core/runtime.hpp", '#include "../../../src/core/scheduler.hpp"',
             ["include/roam/core/runtime.hpp:1"],
             "a public header including its own layer's private header fails"),
            ("src/base/fatal.cpp", "#include <roam/base/../lb/policy.hpp>",
             ["layer 'lb', which layer 'base' may not use"],
             "a path through '..' is judged by where it leads"),
            ("include/roam/am/send.hpp", "#include <roam/nowhere/x.hpp>",
             ["roam/nowhere is no layer"], "a header of no declared layer fails"),
        ]
        for relative, line, texts, what in cases:
            undo = inject(scratch, relative, line)
            rc, out = run(checker, scratch, graph)
            expect(rc == 1 and all(t in out for t in texts), what, out)
            undo()

        rc, out = run(checker, scratch, graph)
        expect(rc == 0, "the tree passes again once the injections are undone", out)


if __name__ == "__main__":
    main()
