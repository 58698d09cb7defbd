#!/usr/bin/env python3
"""Where hypa's front end and verifier disagree with ``ptxas`` on operand types.

    python benchmarks/ptxas_agreement.py              # the table of disagreements
    python benchmarks/ptxas_agreement.py --all        # every case
    python benchmarks/ptxas_agreement.py --small      # CI: every 100th case (skipped without ptxas)

Each case is one statement in an otherwise valid kernel: an instruction with one operand
replaced by a register of another declared type (every scalar type, the predicate
included).  ``ptxas`` (sm_90) decides what is valid; hypa reads and verifies the same text
(``hypa-opt`` without passes).  A case is *accepted-but-invalid* when hypa takes what
``ptxas`` rejects, *rejected-but-valid* the other way round; the second must stay at 0
(hypa would refuse real programs), the first is what the verifier does not check yet.
Needs ``ptxas`` on the PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TYPES = [".pred", ".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s16", ".s32", ".s64", ".f16", ".f32", ".f64"]
PREFIX = {t: "%" + t[1:] + "_" for t in TYPES}  # %s32_0: no digit before the index

#: (statement with {0}, {1} ... for the operands, the declared type of each operand)
TEMPLATES = [
    ("add.s32 {0}, {1}, {2};", [".s32", ".s32", ".s32"]),
    ("add.u64 {0}, {1}, {2};", [".u64", ".u64", ".u64"]),
    ("add.f32 {0}, {1}, {2};", [".f32", ".f32", ".f32"]),
    ("add.f64 {0}, {1}, {2};", [".f64", ".f64", ".f64"]),
    ("sub.s16 {0}, {1}, {2};", [".s16", ".s16", ".s16"]),
    ("mul.lo.u32 {0}, {1}, {2};", [".u32", ".u32", ".u32"]),
    ("mul.wide.s32 {0}, {1}, {2};", [".s64", ".s32", ".s32"]),
    ("mad.lo.s32 {0}, {1}, {2}, {3};", [".s32", ".s32", ".s32", ".s32"]),
    ("fma.rn.f32 {0}, {1}, {2}, {3};", [".f32", ".f32", ".f32", ".f32"]),
    ("and.b32 {0}, {1}, {2};", [".b32", ".b32", ".b32"]),
    ("or.pred {0}, {1}, {2};", [".pred", ".pred", ".pred"]),
    ("not.b64 {0}, {1};", [".b64", ".b64"]),
    ("shl.b32 {0}, {1}, {2};", [".b32", ".b32", ".u32"]),
    ("shr.s64 {0}, {1}, {2};", [".s64", ".s64", ".u32"]),
    ("min.f32 {0}, {1}, {2};", [".f32", ".f32", ".f32"]),
    ("abs.s32 {0}, {1};", [".s32", ".s32"]),
    ("neg.f64 {0}, {1};", [".f64", ".f64"]),
    ("div.rn.f32 {0}, {1}, {2};", [".f32", ".f32", ".f32"]),
    ("sqrt.rn.f64 {0}, {1};", [".f64", ".f64"]),
    ("rcp.approx.f32 {0}, {1};", [".f32", ".f32"]),
    ("mov.u32 {0}, {1};", [".u32", ".u32"]),
    ("mov.f32 {0}, {1};", [".f32", ".f32"]),
    ("mov.b64 {0}, {1};", [".b64", ".b64"]),
    ("selp.b32 {0}, {1}, {2}, {3};", [".b32", ".b32", ".b32", ".pred"]),
    ("setp.lt.s32 {0}, {1}, {2};", [".pred", ".s32", ".s32"]),
    ("setp.eq.f32 {0}, {1}, {2};", [".pred", ".f32", ".f32"]),
    ("cvt.rn.f32.s32 {0}, {1};", [".f32", ".s32"]),
    ("cvt.u64.u32 {0}, {1};", [".u64", ".u32"]),
    ("popc.b32 {0}, {1};", [".u32", ".b32"]),
    ("clz.b64 {0}, {1};", [".u32", ".b64"]),
    ("ld.global.u32 {0}, [{1}];", [".u32", ".u64"]),
    ("ld.global.f64 {0}, [{1}];", [".f64", ".u64"]),
    ("st.global.u32 [{0}], {1};", [".u64", ".u32"]),
    ("st.global.f32 [{0}], {1};", [".u64", ".f32"]),
    ("atom.global.add.u32 {0}, [{1}], {2};", [".u32", ".u64", ".u32"]),
    ("shfl.sync.bfly.b32 {0}, {1}, {2}, {3}, {4};", [".b32", ".b32", ".u32", ".u32", ".u32"]),
]


def kernel(stmt: str) -> str:
    regs = "\n".join(f"\t.reg {t} {PREFIX[t]}<4>;" for t in TYPES)
    return (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
            f"{regs}\n\t{stmt}\n\tret;\n}}\n")


def cases():
    for text, types in TEMPLATES:
        for k in range(len(types)):
            for t in TYPES:
                ops = [f"{PREFIX[types[i]]}{i}" for i in range(len(types))]
                ops[k] = f"{PREFIX[t]}{k}"
                yield text.format(*ops), k, types[k], t


def accepted_by_ptxas(path: str) -> bool:
    return subprocess.run(["ptxas", "-arch=sm_90", path, "-o", os.devnull], capture_output=True).returncode == 0


def accepted_by_hypa(path: str) -> tuple[bool, str]:
    r = subprocess.run([sys.executable, "-m", "hypa.tools.hypa_opt", path, "-o", os.devnull],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"hypa-opt crashed on {path}:\n{r.stderr}")
    return r.returncode == 0, r.stderr.strip().splitlines()[0] if r.stderr.strip() else ""


def check_all(show_all: bool = False, every: int = 1) -> Counter:
    if shutil.which("ptxas") is None:
        raise SystemExit("ptxas is not on the PATH")
    outcome: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        for n, (stmt, k, want, got) in enumerate(cases()):
            if n % every:
                continue
            with open(path, "w") as f:
                f.write(kernel(stmt))
            p = accepted_by_ptxas(path)
            h, why = accepted_by_hypa(path)
            kind = ("agree" if p == h else "accepted-but-invalid" if h else "rejected-but-valid")
            outcome[kind] += 1
            if show_all or kind != "agree":
                print(f"{kind:22s} {stmt:52s} operand {k + 1}: {got} for {want}" + (f"   [{why}]" if why else ""))
    return outcome


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="print every case, not only disagreements")
    ap.add_argument("--every", type=int, default=1, metavar="N", help="only every N-th case (a quick sample)")
    ap.add_argument("--small", action="store_true", help="CI: every 100th case; without ptxas, say so and exit 0")
    a = ap.parse_args()
    if a.small:
        if shutil.which("ptxas") is None:
            print("skipped: ptxas is not on the PATH")
            sys.exit(0)
        a.every = max(a.every, 100)
    out = check_all(a.all, a.every)
    total = sum(out.values())
    print(f"\n{total} cases: {out['agree']} agree with ptxas, {out['accepted-but-invalid']} accepted but invalid, "
          f"{out['rejected-but-valid']} rejected but valid")
    sys.exit(1 if out["rejected-but-valid"] else 0)


if __name__ == "__main__":
    main()
