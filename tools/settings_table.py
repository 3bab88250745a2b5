#!/usr/bin/env python3
"""The README's table of runtime settings, generated from the settings themselves.

Every roam program prints its settings with --roam-help (roam::config::help_text(): the
settings every linked layer registered). This script runs such a program, parses that output and prints
a Markdown table of it, so the README's table cannot drift from the code:

  tools/settings_table.py PROGRAM                     print the table
  tools/settings_table.py PROGRAM --check README.md   exit 1 with a diff when the README's
                                                      block differs from the table
  tools/settings_table.py PROGRAM --write README.md   replace the README's block by the table

PROGRAM is roam-settings (build/default/roam-settings: every layer) or any roam executable, or '-' to read the
--roam-help text from standard input. The README's block is everything between the lines
<!-- settings:begin --> and <!-- settings:end -->. Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
SETTING = re.compile(r"^\s+(--roam-\S+)\s+(\S+)\s+(.*?)\s*$")


def help_text(program):
    if program == "-":
        return sys.stdin.read()
    # ROAM_* variables of the caller's environment must not change (or break) the output.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROAM_")}
    try:
        result = subprocess.run([program, "--roam-help"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, check=False)
    except OSError as error:
        sys.exit("settings_table: cannot run '%s': %s" % (program, error))
    if result.returncode != 0:
        sys.exit("settings_table: '%s --roam-help' exited with %d:\n%s"
                 % (program, result.returncode, result.stderr))
    return result.stdout


def parse(text):
    """[(flag, env, values, meaning)] in the order --roam-help prints them."""
    settings = []
    for line in text.splitlines():
        match = SETTING.match(line)
        if match:
            settings.append([match.group(1), match.group(2), match.group(3), ""])
        elif line.strip() and settings and line.startswith("      "):
            meaning = settings[-1][3]
            settings[-1][3] = (meaning + " " + line.strip()) if meaning else line.strip()
    if not settings:
        sys.exit("settings_table: no settings found in the --roam-help output:\n" + text)
    return [tuple(s) for s in settings]


def split_default(meaning):
    """Takes 'default X' out of the meaning's parenthetical remark: (default, meaning)."""
    for group in re.finditer(r"\s*\(([^()]*)\)", meaning):
        parts = [p.strip() for p in group.group(1).split(";")]
        for i, part in enumerate(parts):
            if part.startswith("default "):
                rest = parts[:i] + parts[i + 1:]
                kept = " (" + "; ".join(rest) + ")" if rest else ""
                return part[len("default "):], meaning[:group.start()] + kept + meaning[group.end():]
    return None, meaning


def cell(text):
    return text.replace("|", "\\|")


def code(text):
    return "`" + cell(text) + "`"


def values_cell(values):
    pieces = values.split("|")
    return ", ".join("…" if p == ".." else code(p) for p in pieces)


def meaning_cell(meaning):
    return re.sub(r"(--roam-[a-z0-9-]+)", r"`\1`", cell(meaning))


def table(settings):
    rows = ["| flag | environment | values | default | meaning |", "|---|---|---|---|---|"]
    for flag, env, values, meaning in settings:
        default, meaning = split_default(meaning)
        rows.append("| %s | %s | %s | %s | %s |" % (
            code(flag), code(env), values_cell(values), code(default) if default else "—",
            meaning_cell(meaning)))
    return "\n".join(rows) + "\n"


def readme_block(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        sys.exit("settings_table: %s has no '%s' ... '%s' block" % (path, BEGIN, END))
    start = text.index("\n", begin) + 1
    return text, start, end


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", help="a roam executable, or - to read --roam-help from stdin")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", metavar="README", help="compare README's block with the table")
    mode.add_argument("--write", metavar="README", help="replace README's block by the table")
    args = parser.parse_args()

    generated = table(parse(help_text(args.program)))
    if args.check:
        text, start, end = readme_block(args.check)
        current = text[start:end]
        if current == generated:
            print("settings_table: %s matches --roam-help" % args.check)
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), generated.splitlines(True),
            args.check + " (settings block)", args.program + " --roam-help"))
        print("settings_table: %s's settings table differs from --roam-help; regenerate it with\n"
              "  python3 tools/settings_table.py %s --write %s"
              % (args.check, args.program, args.check))
        return 1
    if args.write:
        text, start, end = readme_block(args.write)
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text[:start] + generated + text[end:])
        return 0
    sys.stdout.write(generated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
