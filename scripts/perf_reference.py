#!/usr/bin/env python3
"""Writes the performance reference (docs/performance.md) from docs/measurements/current.json.

    python3 scripts/perf_reference.py > docs/performance.md   # regenerate after editing the JSON
    python3 scripts/perf_reference.py --check                 # exit 1 if docs/performance.md differs

current.json holds the newest figure of each benchmark, copied from the dated journal
(docs/dev/performance-history.md) or from a raw output under docs/measurements/<date>/; each entry
names its sources. This script renders one table per benchmark after a short introduction. It
computes no figure: every value and ratio is printed as the JSON spells it. It fails on a malformed
entry (a missing field, a row without a date, an entry date that is not its newest row's) and when
the page would reach 200 lines (the reference is meant to be read, the journal holds the rest).
"""
import argparse
import difflib
import json
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "measurements" / "current.json"
PAGE = ROOT / "docs" / "performance.md"
MAX_LINES = 200
WIDTH = 100

ENTRY_KEYS = ("name", "what", "command", "machine", "ceiling", "hand_written", "date", "source", "rows")
ROW_KEYS = ("case", "value", "unit", "ratio_to_ceiling", "ratio_to_hand_written", "date", "note")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

INTRO = """\
The newest measured figure for each benchmark: what it measures, the command, the machine, and the
date of each row. A benchmark measures its own ceiling (usually a copy of the same bytes) and a
hand-written equivalent (raw pointers or plain arrays, the same arithmetic) in the same run, and
prints ratios to both. Times move between runs and machines, ratios much less: compare ratios.

- **x ceiling**: as each table says, the fraction of the ceiling's rate reached (higher is better,
  1.00 is the ceiling) or a time over the ceiling's time (lower is better).
- **x hand-written**: coalesce's time / the hand-written code's time in the same run (below 1.00,
  coalesce is faster). Empty where a row has no such baseline: its note says what it compares.
- `a / b` lists the cases in the order the row names them; `a-b` is the lowest and highest of the
  runs quoted. `build-gpu` is the Release CUDA build of `scripts/gpu-check.sh`; `build/rel`,
  `build/relx` are Release CPU builds (`-DCOALESCE_ENABLE_CUDA=OFF`), `build/cpu` that of
  `scripts/test.sh`."""

GENERATED = """\
This page is generated: edit docs/measurements/current.json (each entry names its sources), then
run `python3 scripts/perf_reference.py > docs/performance.md`; `scripts/test.sh` fails while the two
differ (`--check`). Raw outputs: `docs/measurements/<date>/`. How each figure was reached, and
every earlier one: docs/dev/performance-history.md."""


def fail(message):
    sys.exit(f"perf_reference: {message}")


def check(data):
    if not isinstance(data.get("machines"), dict) or not isinstance(data.get("benchmarks"), list):
        fail(f"{DATA}: needs 'machines' (an object) and 'benchmarks' (a list)")
    names = set()
    for entry in data["benchmarks"]:
        name = entry.get("name", "?")
        missing = [k for k in ENTRY_KEYS if k not in entry]
        if missing:
            fail(f"{name}: missing {', '.join(missing)}")
        if name in names:
            fail(f"{name}: listed twice")
        names.add(name)
        if not entry["rows"]:
            fail(f"{name}: no rows")
        for row in entry["rows"]:
            missing = [k for k in ROW_KEYS if k not in row]
            if missing:
                fail(f"{name} / {row.get('case', '?')}: missing {', '.join(missing)}")
            if not isinstance(row["date"], str) or not DATE.match(row["date"]):
                fail(f"{name} / {row['case']}: date {row['date']!r} is not YYYY-MM-DD")
            if row["value"] is not None and not row["unit"]:
                fail(f"{name} / {row['case']}: a value without a unit")
            if row["value"] is None and row["ratio_to_ceiling"] is None and row["ratio_to_hand_written"] is None:
                fail(f"{name} / {row['case']}: no value and no ratio")
        newest = max(row["date"] for row in entry["rows"])
        if entry["date"] != newest:
            fail(f"{name}: date {entry['date']} is not its newest row's ({newest})")


def code_spans(text):
    """Puts template names (split<fields<pos>>, aosoa<32>) in backticks, so Markdown shows <...>."""
    out, i = [], 0
    ident = re.compile(r"[A-Za-z_][A-Za-z0-9_:]*<")
    while i < len(text):
        m = ident.search(text, i)
        if not m:
            out.append(text[i:])
            break
        if text.count("`", 0, m.start()) % 2:  # already inside a code span
            out.append(text[i:m.end()])
            i = m.end()
            continue
        depth, j = 0, m.end() - 1
        while j < len(text):
            depth += {"<": 1, ">": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        out.append(text[i:m.start()] + "`" + text[m.start():j] + "`")
        i = j
    return "".join(out)


def cell(value):
    if value is None:
        return ""
    return code_spans(str(value)).replace("|", "\\|")


def wrap(text, indent=""):
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def render(data):
    lines = ["# Performance reference", ""]
    lines += INTRO.split("\n")
    for key, machine in data["machines"].items():
        lines += wrap(f"- **{key}**: {machine}.", "  ")
    lines.append("")
    lines += GENERATED.split("\n")
    for entry in data["benchmarks"]:
        # Two source lines of one paragraph: what it measures; how, where and against what.
        how = f"Command: {entry['command']}. Machine: {entry['machine']}."
        for label, key in (("Ceiling", "ceiling"), ("Hand-written", "hand_written")):
            if entry[key] != "none":
                how += f" {label}: {code_spans(entry[key])}."
        lines += ["", f"## {entry['name']}", code_spans(entry["what"]), how]
        lines += ["", "| case | value | x ceiling | x hand-written | date | note |",
                  "|---|---:|---:|---:|---|---|"]
        for row in entry["rows"]:
            value = "" if row["value"] is None else f"{row['value']} {row['unit']}"
            lines.append(f"| {cell(row['case'])} | {cell(value)} | {cell(row['ratio_to_ceiling'])} | "
                         f"{cell(row['ratio_to_hand_written'])} | {row['date']} | {cell(row['note'])} |")
    text = "\n".join(lines) + "\n"
    if len(lines) >= MAX_LINES:
        fail(f"the page would have {len(lines)} lines (fewer than {MAX_LINES} wanted): "
             "merge or drop rows in docs/measurements/current.json, the journal keeps the rest")
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {PAGE.relative_to(ROOT)} differs from what would be generated")
    args = parser.parse_args()
    try:
        data = json.loads(DATA.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{DATA}: {e}")
    check(data)
    text = render(data)
    if not args.check:
        sys.stdout.write(text)
        return 0
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if current == text:
        return 0
    diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "docs/performance.md",
                                "generated", lineterm="", n=1)
    sys.stderr.write("\n".join(list(diff)[:40]) + "\n")
    sys.stderr.write("perf_reference: docs/performance.md is not what docs/measurements/current.json "
                     "gives: run python3 scripts/perf_reference.py > docs/performance.md\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
