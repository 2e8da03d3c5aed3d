#!/usr/bin/env python3
"""Reads the machine code of cpu_kernels and says, for every kernel, whether its loop is inlined,
vectorized and free of gathers/scatters, next to its hand-written baseline.

    python3 benchmarks/cpu_kernels/check_asm.py build/h-cpu/benchmarks/cpu_kernels/cpu_kernels [--strict]

A kernel's code is every function whose (demangled) name carries the kernel's lambda or baseline:
the OpenMP outlined body, the per-thread range of for_each_index, and the lambda's operator()
when the compiler left it out of line. Columns:
  lambda call  the loop calls the kernel's lambda (one call per element: not inlined)
  packed       packed float arithmetic (v*ps on xmm/ymm/zmm): the loop is vectorized
  scalar       scalar float arithmetic (v*ss): remainder loops, or an unvectorized loop
  gather/scatter  v(p)gather*/v(p)scatter*: unit-stride fields read as gathers
--strict exits 1 if a soa, aosoa or split kernel calls its lambda, is not vectorized, or gathers.
"""
import re
import subprocess
import sys
from collections import defaultdict

KERNEL = re.compile(
    r"cpu_kernels::(step_load_store|step_bindings|step_members|drift_bindings|drift_members)"
    r"<coalesce::view<cpu_kernels::(particle6|particle16), coalesce::(aos\b|soa\b|aosoa<(\d+)ul>|split<)")
RAW = re.compile(
    r"cpu_kernels::raw::(step|step_load_store|drift)<cpu_kernels::(particle6|particle16)(?:, (\d+)ul)?>"
    r"\(cpu_kernels::raw::(aos|soa|aosoa|split)_arrays")
FORM = {"step_load_store": ("step", "load/store"), "step_bindings": ("step", "bindings"),
        "step_members": ("step", "member ptr"), "drift_bindings": ("drift_x", "bindings"),
        "drift_members": ("drift_x", "member ptr")}
PACKED = re.compile(r"^v(fn?m(add|sub)\d+ps|mulps|addps|subps)\b")
SCALAR = re.compile(r"^v(fn?m(add|sub)\d+ss|mulss|addss|subss)\b")
GATHER = re.compile(r"^v(p?gather|p?scatter)")


def functions(binary):
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary], check=True,
                          capture_output=True, text=True).stdout
    name, body = None, []
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name and "\t" in line:
            parts = line.split("\t")
            if len(parts) >= 2:
                body.append(parts[-1].strip())
    if name:
        yield name, body


def layout_of(kind, width):
    if kind.startswith("aosoa"):
        return f"aosoa<{width}>"
    return "split<pos>" if kind.startswith("split") else kind


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary, strict = sys.argv[1], "--strict" in sys.argv
    groups = defaultdict(lambda: {"lambda_call": False, "packed": 0, "scalar": 0, "gather": 0, "functions": 0})
    for name, body in functions(binary):
        m = KERNEL.search(name)
        if m:
            kernel, form = FORM[m.group(1)]
            key = ("16 fields" if m.group(2) == "particle16" else "6 fields", kernel, form,
                   layout_of(m.group(3), m.group(4)), "coalesce")
        else:
            r = RAW.search(name)
            if not r or "_omp_fn" not in name:
                continue
            kernel = "drift_x" if r.group(1) == "drift" else "step"
            form = "load/store" if r.group(1) == "step_load_store" else "-"
            key = ("16 fields" if r.group(2) == "particle16" else "6 fields", kernel, form,
                   layout_of(r.group(4), r.group(3)), "raw")
        g = groups[key]
        g["functions"] += 1
        for ins in body:
            op = ins.split()[0] if ins else ""
            if op == "call" and re.search(r"\{lambda\([^)]*\)#1\}::operator\(\)", ins):
                g["lambda_call"] = True
            g["packed"] += bool(PACKED.match(op))
            g["scalar"] += bool(SCALAR.match(op))
            g["gather"] += bool(GATHER.match(op))
    bad = 0
    print(f"{'record':<10} {'kernel':<8} {'form':<11} {'layout':<10} {'code':<9} {'lambda call':<12} "
          f"{'packed':>6} {'scalar':>6} {'gather':>6}  verdict")
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[3], k[4], k[2])):
        g = groups[key]
        vectorized = g["packed"] > 0
        ok = not g["lambda_call"] and vectorized and g["gather"] == 0
        verdict = "inlined, vectorized, no gathers" if ok else ", ".join(
            x for x in ["NOT INLINED" if g["lambda_call"] else "", "" if vectorized else "SCALAR",
                        "GATHERS" if g["gather"] else ""] if x)
        if key[4] == "coalesce" and key[3] != "aos" and not ok:
            bad += 1
        print(f"{key[0]:<10} {key[1]:<8} {key[2]:<11} {key[3]:<10} {key[4]:<9} "
              f"{'yes' if g['lambda_call'] else 'no':<12} {g['packed']:>6} {g['scalar']:>6} {g['gather']:>6}  {verdict}")
    print(f"\n{bad} soa/aosoa/split coalesce kernels are not inlined, vectorized and gather-free "
          f"(aos is reported, not required: its fields are strided)")
    return 1 if strict and bad else 0


if __name__ == "__main__":
    sys.exit(main())
