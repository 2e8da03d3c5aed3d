#!/usr/bin/env python3
"""Fails on an include that runs up the layers, or on a cycle of includes.

    python3 scripts/check_layers.py [repository root]

The folders of include/coalesce/ and src/ are the layers, lowest first (docs/architecture.md):
  core (reflect, mappings, storage, proxies, views) < memory (spaces, streams, buffers,
  containers, loops) < reorder (keys, sort, permutations, remap) < neighbors (lists built by the
  library) < analysis, mpi (two tops that do not include each other).
A file may include its own layer and the layers below it; coalesce.hpp and mpi.hpp on top
include anything. src/<layer>/ follows the same rule (it implements include/coalesce/<layer>/).
A cycle (a file that reaches itself through includes) is a failure too: `#pragma once` hides
one, and the file that happens to be read first then sees half of the other. So is an include of
Boost in the library: its users need no Boost (Boost.PFR is the tests' oracle only).

A list format is one file (docs/architecture.md): a branch on a format tag (std::is_same_v<Format,
...>, is_same<Format, ...>) outside the format files below fails; what differs between formats goes
through detail::list_format_ops and list_traits (neighbors/list_format.hpp, list_traits.hpp).

Two more rules of the house: the library's internals live in one namespace, coalesce::detail
(backends in src/ may nest theirs inside it: detail::cuda_moves), never in mpi::detail or an
advisor_detail; and examples/ uses the public API only (no detail::), as a user's code would.
"""
import pathlib
import re
import sys

RANK = {"core": 0, "detail": 0, "memory": 1, "reorder": 2, "neighbors": 3, "analysis": 4, "mpi": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(path, root):
    parts = path.relative_to(root).parts
    if parts[0] == "include":
        return parts[2] if len(parts) > 3 else "top"
    if parts[0] == "src":
        return parts[1] if len(parts) > 2 else "top"
    return None


def resolve(path, kind, target, root):
    candidates = []
    if kind == '"':
        candidates.append(path.parent / target)
    candidates.append(root / "include" / target)
    for c in candidates:
        c = pathlib.Path(*pathlib.Path(c).parts)
        try:
            c = c.resolve()
        except OSError:
            continue
        if c.is_file():
            return c
    return None


def detail_namespace_problems(files, root):
    """A detail namespace anywhere but directly in coalesce (nested in coalesce::detail is fine).
    Namespaces are followed by their braces (comments and strings removed first)."""
    problems = []
    token = re.compile(r"\b(?:inline\s+)?namespace\s*([\w:]*)\s*\{|[{}]")
    for f in files:
        stack = []  # one entry per open brace: a namespace's names, or None for any other brace
        for m in token.finditer(code_only(f.read_text())):
            text = m.group(0)
            if text == "}":
                if stack:
                    stack.pop()
                continue
            if text == "{":
                stack.append(None)
                continue
            names = (m.group(1) or "(anonymous)").split("::")
            enclosing = [n for entry in stack if entry for n in entry]
            for k in range(len(names)):
                prefix = "::".join(enclosing + names[: k + 1])
                last = names[k]
                if (last == "detail" or last.endswith("_detail")) and prefix != "coalesce::detail":
                    problems.append(f"{f.relative_to(root)}: namespace {prefix}: internals belong in coalesce::detail")
            stack.append(names)
    return problems


def code_only(text):
    """The text without comments and string or character literals (a `detail` in a string is no use of it)."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.S)


def example_problems(root):
    """examples/ is what a user's code looks like: the public API, no coalesce::detail (named,
    aliased or brought in by a using-directive)."""
    problems = []
    for p in sorted((root / "examples").rglob("*")):
        if p.suffix not in (".hpp", ".cpp", ".cu", ".cuh", ".h"):
            continue
        for number, line in enumerate(code_only(p.read_text()).splitlines(), 1):
            if re.search(r"\bdetail\b", line):
                problems.append(f"{p.relative_to(root)}:{number}: examples use the public API only, not detail::")
    return problems


# The files that may name a list format in a type test: the formats' own.
FORMAT_FILES = {"include/coalesce/neighbors/padded_formats.hpp", "include/coalesce/neighbors/csr_format.hpp",
                "include/coalesce/neighbors/clusters.hpp", "include/coalesce/neighbors/cluster_tile.hpp"}
FORMAT_BRANCH = re.compile(r"\bis_same(?:_v)?\s*<\s*(?:typename\s+)?\w*Format\b|\bis_same(?:_v)?\s*<[^<>;]*,\s*"
                           r"(?:coalesce::)?(?:padded_columns|padded_rows|csr|clusters)\s*>")


def format_branch_problems(files, root):
    """A type test on a list format outside that format's file."""
    problems = []
    for f in files:
        relative = str(f.relative_to(root))
        if relative in FORMAT_FILES:
            continue
        for number, line in enumerate(code_only(f.read_text()).splitlines(), 1):
            if FORMAT_BRANCH.search(line):
                problems.append(f"{relative}:{number}: a branch on a list format outside its file; put what differs "
                                "in the format's list_format_ops (neighbors/list_format.hpp)")
    return problems


# A __host__ __device__ lambda in a library header, and the most lines a lambda body may have and still be
# "short": nvcc miscompiled short extended lambdas that several translation units instantiated alike (the
# host crashed at the launch: the engine's staging, store and warp passes, 2026-12-05/06); the library's
# device passes are named functors (docs/architecture.md). The long passes left (pair_engine.hpp's
# generic loop, many_body.hpp's density and force passes) never crashed.
EXTENDED_LAMBDA = re.compile(r"\[[=&][^\]]*\]\s*(?:COALESCE_HOST_DEVICE|__host__\s+__device__|__device__)")
SHORT_LAMBDA_LINES = 12


def short_lambda_problems(files, root):
    """A short extended lambda in a header under include/coalesce (a user's code may write them)."""
    problems = []
    for f in files:
        relative = str(f.relative_to(root))
        if not relative.startswith("include/coalesce/"):
            continue
        code = code_only(f.read_text())
        for m in EXTENDED_LAMBDA.finditer(code):
            start = code.find("{", m.end())
            depth, end = 0, start
            for end in range(start, len(code)):
                depth += {"{": 1, "}": -1}.get(code[end], 0)
                if depth == 0:
                    break
            if code.count("\n", start, end) < SHORT_LAMBDA_LINES:
                number = code.count("\n", 0, m.start()) + 1
                problems.append(f"{relative}:{number}: a short __host__ __device__ lambda in a library template; "
                                "write a named functor (nvcc crashes the host when several .cu files instantiate "
                                "it alike)")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = [p.resolve() for d in ("include/coalesce", "src") for p in (root / d).rglob("*")
             if p.suffix in (".hpp", ".cpp", ".cu", ".cuh", ".h")]
    if not files:
        print(f"FAILED: no headers or sources under {root}/include/coalesce and {root}/src (run from the repository root)")
        return 1
    graph, problems = {}, []
    for f in files:
        layer = layer_of(f, root)
        graph[f] = []
        for kind, target in INCLUDE.findall(f.read_text()):
            if target.startswith("boost/"):
                problems.append(f"{f.relative_to(root)} includes <{target}>: the library and its users need no Boost")
                continue
            to = resolve(f, kind, target, root)
            if to is None or to not in set(files):
                continue  # the standard library, CUDA, CCCL, MPI, a generated header
            graph[f].append(to)
            other = layer_of(to, root)
            if layer == "top" or other == layer:
                continue
            if other == "top":
                problems.append(f"{f.relative_to(root)} includes the umbrella {to.relative_to(root)}")
            elif layer not in RANK or other not in RANK:
                problems.append(f"{f.relative_to(root)} -> {to.relative_to(root)}: a folder that is no layer")
            elif RANK[other] >= RANK[layer]:
                problems.append(f"upward include: {f.relative_to(root)} ({layer}) includes {to.relative_to(root)} ({other})")
    problems += detail_namespace_problems(files, root)
    problems += example_problems(root)
    problems += format_branch_problems(files, root)
    problems += short_lambda_problems(files, root)
    # cycles, by depth-first search
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(str(p.relative_to(root)) for p in loop))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for f in sorted(graph):
        if f not in state:
            visit(f)
    for p in problems:
        print(p)
    if problems:
        print(f"FAILED: {len(problems)} problem(s) with the layers, namespaces or examples (see docs/architecture.md)")
        return 1
    print(f"layers OK: {len(files)} files, no upward include, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
