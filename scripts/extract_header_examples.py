#!/usr/bin/env python3
"""Turns the example at the top of each public header into a C++ file that must compile.

usage: extract_header_examples.py <include/coalesce> <output dir>

A header's example is the run of comment lines indented by three spaces ("//   ...") at the
top of the file, up to the first prose line after it. Lines starting with "#include" are
dropped; "struct ..." lines (and, for a struct over several lines, the lines up to its closing
brace) move to namespace scope (device lambdas may not capture local
types); the rest becomes the body of a function that sees the shared context
(tests/header_examples/context.hpp). Headers without a code example are listed in SKIP."""
import pathlib
import re
import sys

SKIP = {"core/config.hpp",  # a list of macros, not code
        "mpi.hpp", "mpi/migrate.hpp", "mpi/halo.hpp", "mpi/communicator.hpp", "mpi/export_halo.hpp",  # need MPI: tests/mpi/mpi_test.cpp runs what their examples show
        # a layer's internals (the type-erased operations libcoalesce.a implements, generated tables)
        "core/member_types.hpp", "memory/buffer.hpp", "memory/transfer.hpp", "reorder/reorder_ops.hpp",
        "reorder/indexed_moves.hpp", "neighbors/list_ops.hpp", "neighbors/list_format.hpp",
        "neighbors/cluster_tile.hpp",  # clusters.hpp's GPU traversal: clusters.hpp's example runs it
        "neighbors/cluster_pair_loop.hpp",  # compute_pairs' GPU loop: pair_engine.hpp's example is its interface
        "neighbors/cluster_pair_loop_host.hpp",  # compute_pairs' CPU loop: likewise
        "core/node_storage.hpp"}  # what nested proxies hold: reference.hpp's example uses them


def example_lines(text):
    lines = []
    started = False
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        if line.startswith("//   "):
            started = True
            lines.append(line[5:])
        elif started and re.match(r"^// ?\S", line):
            break  # prose after the example
        elif started:
            lines.append("")
    return lines


def main(include_dir, out_dir):
    include_dir, out_dir = pathlib.Path(include_dir), pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for header in sorted(include_dir.rglob("*.hpp")):
        relative = header.relative_to(include_dir).as_posix()
        if relative in SKIP:
            continue
        lines = example_lines(header.read_text())
        if not lines:
            sys.exit(f"{header}: no example at the top (lines starting with '//   '); add one or list it in SKIP")
        # A "struct" line at the example's margin moves to namespace scope with the lines that
        # follow it until its braces close (a struct written over several lines).
        types, body, depth = [], [], 0
        for l in lines:
            if depth > 0 or l.startswith("struct "):
                types.append(l)
                depth += l.count("{") - l.count("}")
            elif not l.startswith("#include"):
                body.append(l)
        name = relative[: -len(".hpp")].replace("/", "_")
        source = [
            f"// Generated from include/coalesce/{relative} by scripts/extract_header_examples.py: the",
            "// header's top-of-file example, which must compile.",
            "#include <coalesce/coalesce.hpp>",
            '#include "context.hpp"',
            f"namespace header_example_{name} {{",
            "using namespace header_examples;",
            *types,
            f"[[maybe_unused]] void example(context& ctx) {{",
            "  COALESCE_EXAMPLE_CONTEXT(ctx)",
            "  {",
            *[("    " + l) if l else "" for l in body],
            "  }",
            "}",
            "}",
            "",
        ]
        target = out_dir / f"{name}_example.cpp"
        text = "\n".join(source)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        written.append(str(target))
    print(";".join(written), end="")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
