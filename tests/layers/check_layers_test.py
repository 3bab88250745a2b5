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

        undo = inject(scratch, "src/transport/wire.cpp", "#include <roam/lb/policy.hpp>")
        rc, out = run(checker, scratch, graph)
        expect(rc == 1 and "src/transport/wire.cpp:1: includes <roam/lb/policy.hpp>" in out
               and "layer 'lb', which layer 'transport' may not use" in out,
               "an upward include (transport -> lb) fails", out)
        undo()

        undo = inject(scratch, "src/mobile/directory.cpp", '#include "../core/scheduler.hpp"')
        rc, out = run(checker, scratch, graph)
        expect(rc == 1 and "src/mobile/directory.cpp:1" in out and "private header" in out,
               "another layer's private header fails", out)
        undo()

        undo = inject(scratch, "include/roam/core/runtime.hpp", '#include "../../../src/core/scheduler.hpp"')
        rc, out = run(checker, scratch, graph)
        expect(rc == 1 and "include/roam/core/runtime.hpp:1" in out,
               "a public header including its own layer's private header fails", out)
        undo()

        undo = inject(scratch, "src/base/fatal.cpp", "#include <roam/base/../lb/policy.hpp>")
        rc, out = run(checker, scratch, graph)
        expect(rc == 1 and "layer 'lb', which layer 'base' may not use" in out,
               "a path through '..' is judged by where it leads", out)
        undo()

        undo = inject(scratch, "include/roam/am/send.hpp", "#include <roam/nowhere/x.hpp>")
        rc, out = run(checker, scratch, graph)
        expect(rc == 1 and "roam/nowhere is no layer" in out,
               "a header of no declared layer fails", out)
        undo()

        rc, out = run(checker, scratch, graph)
        expect(rc == 0, "the tree passes again once the injections are undone", out)


if __name__ == "__main__":
    main()
