#!/usr/bin/env python3
"""Checkpoint/restart of examples/checkpoint_restart: restarted runs end with the bits of an
uninterrupted one, and damaged checkpoints are refused before anything is loaded.

  restart_test.py --example EXE --work DIR inproc
  restart_test.py --example EXE --work DIR --mpiexec "mpiexec -n" mpi
  restart_test.py --example EXE --other EXE2 --work DIR damaged
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

STEPS = ["--steps", "40"]


def run(cmd, env_extra=None, expect_ok=True, timeout=120):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    if expect_ok and p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{out}")
    return p.returncode, out


def result_line(out, cmd):
    lines = [l for l in out.splitlines() if l.startswith("after ")]
    if len(lines) != 1:
        sys.exit(f"FAILED: no result line from {' '.join(cmd)}\n{out}")
    return lines[0]


def inproc(exe, nodes, *args, placement=None):
    cmd = [exe, *STEPS, *args, "--roam-nodes", str(nodes), "--roam-transport", "inproc"]
    if placement:
        cmd += ["--roam-restart-placement", placement]
    return cmd


def expect_same(reference, cmd, env=None, restarted_at=None):
    _, out = run(cmd, env)
    got = result_line(out, cmd)
    if got != reference:
        sys.exit(f"FAILED: {' '.join(cmd)} gave\n  {got}\ninstead of\n  {reference}\n{out}")
    if restarted_at is not None and f"restarted at step {restarted_at}" not in out:
        sys.exit(f"FAILED: {' '.join(cmd)} did not restart at step {restarted_at}\n{out}")
    print(f"ok: {' '.join(cmd)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", required=True)
    ap.add_argument("--other", help="another roam program (a different handler table)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--mpiexec", help='the launcher and its count flag, e.g. "mpiexec -n"')
    ap.add_argument("mode", choices=["inproc", "mpi", "damaged"])
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    os.chdir(a.work)
    exe = a.example

    # The reference: 4 nodes, never interrupted, no checkpoint.
    cmd = inproc(exe, 4)
    reference = result_line(run(cmd)[1], cmd)
    print(f"reference: {reference}")
    # The same run checkpointing after step 20 ends the same.
    expect_same(reference, inproc(exe, 4, "--checkpoint-every", "20", "--checkpoint-dir", "c4"))

    if a.mode == "inproc":
        for nodes in (2, 3, 4):
            expect_same(reference, inproc(exe, nodes, "--roam-restart", "c4"), restarted_at=20)
        # A restarted run checkpoints in turn (node 0 answering for node 3's blocks on 3
        # nodes), and that checkpoint restarts on fewer and on more nodes than either.
        expect_same(reference, inproc(exe, 3, "--roam-restart", "c4", "--checkpoint-every", "10",
                                      "--checkpoint-dir", "c3"), restarted_at=20)
        expect_same(reference, inproc(exe, 6, "--roam-restart", "c3", placement="block"),
                    restarted_at=30)
        expect_same(reference, inproc(exe, 2, "--roam-restart", "c3"), restarted_at=30)
        # Three checkpoints into one directory: only the last one's files stay.
        expect_same(reference, inproc(exe, 4, "--checkpoint-every", "10", "--checkpoint-dir", "cg"))
        kept = sorted(os.listdir("cg"))
        wanted = sorted(["roam-checkpoint"] + [f"node{k}.g3.ckpt" for k in range(4)])
        if kept != wanted:
            sys.exit(f"FAILED: after 3 checkpoints cg holds {kept}, not {wanted}")
        expect_same(reference, inproc(exe, 3, "--roam-restart", "cg"), restarted_at=30)
    elif a.mode == "mpi":
        launcher = shlex.split(a.mpiexec)
        mpi_env = {"ROAM_TRANSPORT": "mpi"}
        expect_same(reference, launcher + ["3", exe, *STEPS, "--roam-restart", "c4"], mpi_env,
                    restarted_at=20)
        # Written under mpiexec (2 ranks x 2 nodes), restarted in one process on 3 nodes.
        expect_same(reference, launcher + ["2", exe, *STEPS, "--checkpoint-every", "25",
                                           "--checkpoint-dir", "cm"],
                    {"ROAM_TRANSPORT": "mpi", "ROAM_NODES_PER_RANK": "2"})
        expect_same(reference, inproc(exe, 3, "--roam-restart", "cm"), restarted_at=25)
    else:
        damaged(exe, a.other)
    print("PASSED")


def damaged(exe, other):
    """Each damage: the restart fails, names the file, and no body ran."""
    def copy(name):
        shutil.rmtree(name, ignore_errors=True)
        shutil.copytree("c4", name)
        return name

    def flip(path, offset):
        with open(path, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0x40]))

    def truncate(path, keep):
        with open(path, "r+b") as f:
            f.truncate(keep)

    cases = []
    d = copy("flipped")
    flip(f"{d}/node3.g1.ckpt", os.path.getsize(f"{d}/node3.g1.ckpt") - 5)
    cases.append((d, f"{d}/node3.g1.ckpt: its contents are corrupt", exe))
    d = copy("truncated")
    truncate(f"{d}/node2.g1.ckpt", 100)
    cases.append((d, f"{d}/node2.g1.ckpt: truncated: 100 bytes", exe))
    d = copy("short_manifest")
    truncate(f"{d}/roam-checkpoint", 40)
    cases.append((d, f"{d}/roam-checkpoint: truncated", exe))
    d = copy("missing")
    os.remove(f"{d}/node1.g1.ckpt")
    cases.append((d, f"cannot open '{d}/node1.g1.ckpt'", exe))
    d = copy("header")
    flip(f"{d}/node0.g1.ckpt", 12)
    cases.append((d, f"{d}/node0.g1.ckpt: its header is corrupt", exe))
    if other:
        cases.append(("c4", "c4/roam-checkpoint: it was written by another program", other))
    for directory, expected, program in cases:
        cmd = inproc(program, 2, "--roam-restart", directory, placement="block")
        rc, out = run(cmd, expect_ok=False, timeout=60)
        if rc == 0 or expected not in out or "roam: fatal error" not in out:
            sys.exit(f"FAILED: {' '.join(cmd)} (exit {rc}) should fail with '{expected}'\n{out}")
        if "restarted at step" in out or "after " in out:
            sys.exit(f"FAILED: {' '.join(cmd)} ran its body from a damaged checkpoint\n{out}")
        print(f"refused: {directory}: {expected}")


if __name__ == "__main__":
    main()
