#!/usr/bin/env python3
"""Reads the machine code of neighbor_build_cpu and says whether the library's neighbour force
kernel (library_force_cpu: for_each_index over a verlet_list view, for_each_neighbor, the particles
through their view) is inlined and compiled like the hand-written one (hand_force_cpu: a plain
OpenMP loop over the hand-written list and arrays).

    python3 benchmarks/neighbor_build_cpu/check_asm.py build/relx/benchmarks/neighbor_build_cpu/neighbor_build_cpu [--strict]

A kernel's code is every function whose demangled name carries its name: the OpenMP outlined body,
the per-thread range of for_each_index, the kernel's lambdas when the compiler left them out of
line. Columns:
  calls    calls other than the OpenMP runtime, exceptions and the range of for_each_index: a
           lambda, a view access or for_each_neighbor left out of line
  packed   packed float arithmetic (v*ps on xmm/ymm/zmm): the loop is vectorized
  scalar   scalar float arithmetic (v*ss)
  gather   v(p)gather*: loads of j's position as gathers
--strict exits 1 if the library's kernel makes such calls, or is not vectorized where the
hand-written kernel is (or vectorized the other way round: one with packed, the other without).
"""
import importlib.util
import os
import re
import sys

# The objdump reader of tests/large_unit/check_calls.py: (demangled name, instructions) per function.
_spec = importlib.util.spec_from_file_location(
    "check_calls", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "large_unit",
                                "check_calls.py"))
_check_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_check_calls)
functions = _check_calls.functions

KERNELS = {"hand-written": "hand_force_cpu", "library": "library_force_cpu"}
PACKED = re.compile(r"^v(fn?m(add|sub)\d+ps|mulps|addps|subps|divps|rcp\w*ps|roundps|rndscaleps)\b")
SCALAR = re.compile(r"^v(fn?m(add|sub)\d+ss|mulss|addss|subss|divss|roundss|rndscaless)\b")
GATHER = re.compile(r"^v(p?gather)")
# Calls that are not the kernel's own code: the OpenMP runtime, exceptions, and the per-thread range
# of for_each_index (whose body is counted as the library kernel's code itself).
ALLOWED_CALL = re.compile(r"(GOMP_|omp_|_Unwind|exception_ptr|rethrow_exception|__cxa_|for_each_index_range|"
                          r"share_among_threads|terminate)")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__)
        return 2
    strict = "--strict" in sys.argv
    stats = {k: {"functions": 0, "calls": [], "packed": 0, "scalar": 0, "gather": 0} for k in KERNELS}
    for name, body in functions(args[0]):
        # Mangled names of OpenMP helpers carry the kernel's name too (share_among_threads<...>).
        for kernel, needle in KERNELS.items():
            if needle not in name and needle not in re.sub(r"\d+", "", name):
                continue
            s = stats[kernel]
            s["functions"] += 1
            for ins in body:
                op = ins.split()[0] if ins else ""
                if op == "call" and not ALLOWED_CALL.search(ins):
                    s["calls"].append(ins[:160])
                s["packed"] += bool(PACKED.match(op))
                s["scalar"] += bool(SCALAR.match(op))
                s["gather"] += bool(GATHER.match(op))
    print(f"{'kernel':<14} {'functions':>9} {'calls':>6} {'packed':>7} {'scalar':>7} {'gather':>7}")
    for kernel, s in stats.items():
        print(f"{kernel:<14} {s['functions']:>9} {len(s['calls']):>6} {s['packed']:>7} {s['scalar']:>7} {s['gather']:>7}")
        for c in s["calls"][:5]:
            print(f"    call: {c}")
    hand, lib = stats["hand-written"], stats["library"]
    problems = []
    if hand["functions"] == 0 or lib["functions"] == 0:
        problems.append("a kernel's code was not found (built without -O2, or renamed?)")
    if lib["calls"]:
        problems.append("the library's kernel calls out of line (not inlined)")
    if (hand["packed"] > 0) != (lib["packed"] > 0):
        problems.append("one kernel is vectorized and the other is not")
    verdict = "library kernel inlined, compiled like the hand-written one" if not problems else "; ".join(problems)
    print(verdict)
    return 1 if strict and problems else 0


if __name__ == "__main__":
    sys.exit(main())
