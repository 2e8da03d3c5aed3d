#!/usr/bin/env python3
"""Fails when a kernel of the large translation unit calls a function of the library, of the
program or of the standard library: every step of the access chain v[i][&T::m] must be inlined,
whatever the size of the unit.

    python3 tests/large_unit/check_calls.py <binary> [kernel names ...]

A kernel's code is every function whose demangled name carries `large_unit::<kernel>` (the
kernel itself, its lambdas, the OpenMP bodies and for_each_index loops made for it). Calls to
the C runtime and OpenMP runtime (GOMP_*, omp_*, libm) are allowed and listed; a call whose target
names `coalesce::`, `large_unit::` or `std::` is a failure (it is a piece of the access chain, or
the kernel's own lambda, left out of line).
"""
import re
import subprocess
import sys

KERNELS = ["zero_forces", "lj_half_forces", "initial_integrate", "final_integrate", "wrap_positions",
           "kinetic_energy", "potential_energy", "max_displacement2", "remember_positions", "remove_drift",
           "scale_types"]
CALL = re.compile(r"^(call|jmp)q?\s+[0-9a-f]+\s+<(.+)>$")
BAD = re.compile(r"coalesce::|large_unit::|std::")
# for_each_index's loop functions: called once per kernel launch, their bodies checked like the
# kernel's (their names carry the kernel's lambda).
LOOP_HOLDER = re.compile(r"void coalesce::detail::for_each_index_(serial|range)<")


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
            body.append(line.split("\t")[-1].strip())
    if name:
        yield name, body


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    kernel = re.compile(r"large_unit::(" + "|".join(KERNELS) + r")\b")
    seen, bad, allowed = set(), [], set()
    for name, body in functions(binary):
        m = kernel.search(name)
        if not m:
            continue
        seen.add(m.group(1))
        for instruction in body:
            c = CALL.match(instruction)
            if not c or "+0x" in c.group(2) and not BAD.search(c.group(2).split("+0x")[0]):
                continue  # a jump inside the function
            target = c.group(2).split("+0x")[0]
            if target == name or LOOP_HOLDER.match(target):
                continue  # the kernel calls the function that holds its loop (checked itself)
            if BAD.search(target):
                bad.append((name, target))
            elif c.group(1) == "call":
                allowed.add(target)
    missing = [k for k in KERNELS if k not in seen]
    print(f"kernels found: {len(seen)} of {len(KERNELS)}; runtime calls allowed: {', '.join(sorted(allowed)) or 'none'}")
    for name, target in bad:
        print(f"CALL in kernel  {name[:150]}\n            ->  {target[:200]}")
    if missing:
        print(f"FAILED: kernels not found in the binary: {', '.join(missing)} (renamed? the check would see nothing)")
    if bad:
        print(f"FAILED: {len(bad)} calls left in kernels: the access chain is not inlined in this translation unit")
    if missing or bad:
        return 1
    print("OK: no call of the library, the program or the standard library in any kernel")
    return 0


if __name__ == "__main__":
    sys.exit(main())
