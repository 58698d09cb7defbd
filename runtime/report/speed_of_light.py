"""The speed-of-light breakdown of one launch's timing estimate (Nsight Compute's *GPU Speed
Of Light* and its rule texts, rebuilt on the timing model's own terms).

``Estimate.shares`` (runtime/models/timing.py) splits the estimated cycles by what decided
them: the SM rounds' latency, issue and pipe bounds, the L2/DRAM bandwidth bounds, CTA launch;
the shares add up to the estimate.  ``Estimate.bank_conflict_cycles`` is what the shared
bank conflicts add (the estimate minus the same estimate with conflict-free shared accesses).
This module names the shares, orders them and words one sentence of advice for the largest.
It reads the JSON form (``time_estimate`` of a profile entry), so a saved profile shows the same.
"""

from __future__ import annotations

#: a share's key in ``Estimate.shares`` -> what the page calls it
LABELS = {
    "latency": "latency (warps wait on dependences)",
    "issue": "instruction issue",
    "unit:lsu": "LSU pipe / L1 and shared-memory bandwidth",
    "l2_bandwidth": "L2 bandwidth",
    "l2_sm_bandwidth": "L2 bandwidth (one SM's port)",
    "dram_bandwidth": "DRAM bandwidth",
    "cta_launch": "CTA launch and unequal CTAs",
    "cta_dispatch": "CTA dispatch",
    "atomic_serialization": "atomics on one address",
    "atomic_throughput": "atomic throughput",
}


def label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    if key.startswith("unit:"):
        return f"{key[5:]} pipe"
    return key.replace("_", " ")


def breakdown(est: dict) -> list[tuple[str, str, float]]:
    """(key, label, percent of the estimated kernel cycles) per share of at least 0.05%,
    largest first."""
    cycles = float(est.get("cycles") or 0.0)
    shares = est.get("shares") or {}
    if cycles <= 0:
        return []
    rows = [(k, label(k), 100.0 * float(v) / cycles) for k, v in shares.items() if 100.0 * float(v) / cycles >= 0.05]
    return sorted(rows, key=lambda r: -r[2])


def bank_conflict_percent(est: dict) -> float:
    cycles = float(est.get("cycles") or 0.0)
    return 100.0 * float(est.get("bank_conflict_cycles") or 0.0) / cycles if cycles > 0 else 0.0


def advice(est: dict, top_stall: str | None = None) -> list[str]:
    """One sentence for the largest share, and one for the bank conflicts where they cost
    at least 5% of the time (first when they cost more than the largest share's advice
    would address)."""
    out: list[str] = []
    rows = breakdown(est)
    conflicts = bank_conflict_percent(est)
    if conflicts >= 5.0:
        out.append(f"Shared-memory bank conflicts cost {conflicts:.0f}% of the estimated kernel time: pad the "
                   f"shared array (e.g. [32][33] instead of [32][32]) or change the access so that the lanes of "
                   f"a warp read different banks.")
    if not rows:
        return out
    key, name, pct = rows[0]
    occ = 100.0 * float((est.get("occupancy") or {}).get("occupancy", 0.0))
    if key == "latency":
        wait = f" (mostly {top_stall})" if top_stall else ""
        text = (f"Latency decides {pct:.0f}% of the time: warps wait on dependences{wait} that the other resident "
                f"warps do not hide (occupancy {occ:.0f}%); more warps per SM or more independent work per "
                f"thread (unrolled, batched loads) hide it.")
    elif key == "issue":
        text = (f"Instruction issue decides {pct:.0f}% of the time: the kernel executes too many instructions for "
                f"its work; fewer address computations, wider loads and less predicated-off work help.")
    elif key == "unit:lsu":
        text = (f"The LSU pipe (L1 and shared-memory bandwidth) decides {pct:.0f}% of the time: fewer, wider or "
                f"better-coalesced accesses, and conflict-free shared memory, relieve it.")
    elif key.startswith("unit:"):
        text = (f"The {key[5:]} pipe decides {pct:.0f}% of the time: the kernel is compute-bound on it; a "
                f"cheaper instruction mix (or another pipe, e.g. tensor cores) is the way down.")
    elif key in ("l2_bandwidth", "l2_sm_bandwidth"):
        text = (f"L2 bandwidth decides {pct:.0f}% of the time: reuse data from shared memory or registers "
                f"(tiling) so that fewer requests miss L1.")
    elif key == "dram_bandwidth":
        text = (f"DRAM bandwidth decides {pct:.0f}% of the time: the kernel is memory-bound; move fewer bytes "
                f"(smaller types, fused kernels) or reuse them through L2 and shared memory.")
    elif key in ("cta_launch", "cta_dispatch"):
        text = (f"Launching CTAs (and CTAs of unequal work) decides {pct:.0f}% of the time: more work per CTA, "
                f"or fewer, larger CTAs.")
    elif key.startswith("atomic"):
        text = (f"Atomics decide {pct:.0f}% of the time: many lanes update the same addresses; reduce in "
                f"registers or shared memory first.")
    else:
        text = f"{name} decides {pct:.0f}% of the time."
    out.append(text)
    return out
