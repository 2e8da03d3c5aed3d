#!/usr/bin/env python3
"""Fails unless the CPU cluster-pair loop (neighbors/cluster_pair_loop_host.hpp) is vectorized into
256-bit registers: packed float arithmetic on ymm registers in the functions of
cluster_pair_loop_host_run, in an object compiled with -O3 -mavx2 -mfma (cluster_pair_simd.cpp).

    python3 tests/large_unit/check_simd.py <object file>

Prints the packed ymm, packed xmm and scalar float instructions it found. The loop evaluates the
pair law for one i particle against the 8 particles of a j cluster in one ymm register per
quantity; a loop the compiler left scalar has no ymm arithmetic at all.
"""
import importlib.util
import os
import re
import sys

_spec = importlib.util.spec_from_file_location(
    "check_calls", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_calls.py"))
_check_calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_check_calls)

PACKED = re.compile(r"^v(fn?m(add|sub)\d+ps|mulps|addps|subps|divps|rcpps|maxps|minps|andps|blendvps)\b")
SCALAR = re.compile(r"^v(fn?m(add|sub)\d+ss|mulss|addss|subss|divss)\b")
NEEDLE = "cluster_pair_loop_host_run"
# The fewest packed ymm instructions that say the loop body is vectorized: r^2 (3 fma or mul/add),
# the law (a handful), the force and its three components.
FEWEST = 12


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    ymm = xmm = scalar = functions = 0
    for name, body in _check_calls.functions(sys.argv[1]):
        if NEEDLE not in name:
            continue
        functions += 1
        for ins in body:
            op = ins.split()[0] if ins else ""
            if PACKED.match(op):
                if "%ymm" in ins:
                    ymm += 1
                else:
                    xmm += 1
            elif SCALAR.match(op):
                scalar += 1
    print(f"{NEEDLE}: {functions} functions, packed ymm {ymm}, packed xmm {xmm}, scalar {scalar}")
    if functions == 0:
        print(f"FAILED: no function named {NEEDLE} in {sys.argv[1]} (inlined away or renamed?)")
        return 1
    if ymm < FEWEST:
        print(f"FAILED: {ymm} packed ymm float instructions, expected at least {FEWEST}: the loop is not vectorized")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
