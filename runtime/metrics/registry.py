"""Every metric hypa reports, declared once (docs/design.md, "Metrics").

A metric is a *count* (additive: CTAs, launches, blocks and source lines sum it), a *ratio* of
counts (recomputed from the summed counts -- never averaged), a *static* figure (the same for
every launch of a kernel) or a *max*.  ``Metrics.values``, the table, JSON and CSV writers,
``hypa diff``, the HTML report, the source view and the GPU harness read the declarations
here, so a new metric is one ``Metric`` in ``LAUNCH`` (or ``MEMORY``) over counts that exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

COUNT, RATIO, STATIC, MAX = "count", "ratio", "static", "max"


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str = COUNT
    #: a ratio's numerator, or what a derived count adds up: counts with their signs
    terms: tuple[tuple[str, int], ...] = ()
    #: a ratio's denominator (a count)
    denominator: str = ""
    #: a ratio is ``scale * numerator / denominator``, ``empty`` where the denominator is 0
    scale: float = 1.0
    empty: float = 0.0
    #: "%" (a percentage), "fraction" (shown as a percentage), else the count's unit
    unit: str = ""
    #: short label of a column or a ``hypa diff`` row
    label: str = ""
    #: a key of ``Metrics.values`` and the JSON, a column of the CSV; False: an input other
    #: metrics are computed from, not reported itself
    reported: bool = True
    #: reported only where its counters exist (the call counters of a kernel with real calls):
    #: no CSV column
    optional: bool = False
    #: ``hypa diff`` marks a fall as worse (else a rise)
    higher_is_better: bool = False
    #: memory metrics: the spaces they exist in ("global local", "shared"; "" every one)
    space: str = ""

    def value(self, counts: Mapping) -> float:
        """The metric from the counts of one launch, CTA, instruction or group of them."""
        if self.kind == RATIO:
            return self.ratio(_sum_terms(self.terms, counts), _count(self.denominator, counts))
        if self.terms:
            return _sum_terms(self.terms, counts)
        return counts[self.name]

    def ratio(self, num: float, den: float) -> float:
        if not den:
            return self.empty
        return num / den if self.scale == 1 else self.scale * num / den

    def parts(self, d: Mapping) -> tuple[float, float]:
        """A ratio's (numerator, denominator) in a report's dict, to sum over launches: from its
        counts, or, for a count the report does not show (the thread instructions emulated),
        from the ratio and the other count."""
        num = _sum_terms(self.terms, d) if all(_has(t, d) for t, _ in self.terms) else None
        den = _count(self.denominator, d) if _has(self.denominator, d) else None
        if num is None:
            v = d[self.name]
            num = (v * den if self.scale == 1 else v * den / self.scale) if den else 0
        elif den is None:
            v = d[self.name]
            den = (num / v if self.scale == 1 else num * self.scale / v) if v else 0
        return num, den

    def of(self, d: Mapping) -> float:
        """The metric of a report's dict: the value it holds, else computed from its counts
        (a missing count is 0)."""
        if self.name in d:
            return d[self.name]
        if self.kind == RATIO:
            return self.ratio(*self.parts(_Zeros(d)))
        return self.value(_Zeros(d))

    def combine(self, dicts: Iterable[Mapping]) -> float:
        """The metric over several launches (or CTAs, lines): counts add up, a ratio is the
        ratio of the summed counts, a static figure is the first one's, a max the largest (a
        count a dict lacks is 0)."""
        dicts = [_Zeros(d) for d in dicts]
        if self.kind == RATIO:
            num = den = 0
            for d in dicts:
                n, m = self.parts(d)
                num += n
                den += m
            return self.ratio(num, den)
        if self.kind == STATIC:
            return dicts[0][self.name] if dicts else 0
        if self.kind == MAX:
            return max((d[self.name] for d in dicts), default=0)
        total = 0
        for d in dicts:
            total += self.of(d)
        return total

    def display(self, v: float) -> float | str:
        """The value as the text table shows it (counts as they are)."""
        if self.unit == "%":
            return f"{v:.2f} %"
        if self.unit == "fraction":
            return f"{100 * v:.2f} %"
        return v


def _has(name: str, counts: Mapping) -> bool:
    if name in counts:
        return True
    m = _derived(name)
    return m is not None and all(_has(t, counts) for t, _ in m.terms)


def _derived(name: str) -> Metric | None:
    """The declaration of a count made of other counts (``flops``, ``bank_conflicts``)."""
    for m in (*LAUNCH, *MEMORY):
        if m.name == name and m.kind == COUNT and m.terms:
            return m
    return None


def _count(name: str, counts: Mapping) -> float:
    if name in counts:
        return counts[name]
    m = _derived(name)
    return counts[name] if m is None else m.value(counts)


def _sum_terms(terms, counts: Mapping) -> float:
    total = 0
    for t, sign in terms:
        total += sign * _count(t, counts)
    return total


class _Zeros(dict):
    """A report's dict in which a count it lacks is 0."""

    def __missing__(self, key):
        return 0


#: the metrics of a launch (and of a CTA, ``--per-cta``), in the order of ``Metrics.values``,
#: the JSON and the CSV columns (docs/design.md, "Metrics")
LAUNCH: list[Metric] = [
    Metric("static_instructions", STATIC, label="static instr."),
    Metric("static_estimate", label="static estimate"),
    Metric("inst_executed", label="warp instr."),
    Metric("thread_inst_executed", label="thread instr."),
    Metric("not_predicated_off_thread_inst_executed", label="not pred. off"),
    Metric("flop_count_sp", label="FLOPs sp"),
    Metric("flop_count_dp", label="FLOPs dp"),
    Metric("flop_count_hp", label="FLOPs hp"),
    Metric("flop_count_special", label="special"),
    Metric("branch", label="branches"),
    Metric("divergent_branch", label="divergent"),
    Metric("branch_efficiency", RATIO, (("branch", 1), ("divergent_branch", -1)), "branch", scale=100.0, empty=100.0,
           unit="%", label="branch eff. %", higher_is_better=True),
    Metric("executed_fraction", RATIO, (("emulated_thread_inst_executed", 1),), "thread_inst_executed",
           unit="fraction", label="executed"),
    # thread instructions of the slice the emulator ran (``KernelProgram.reported``)
    Metric("emulated_thread_inst_executed", reported=False, label="emulated thread instr."),
    Metric("flops", terms=(("flop_count_sp", 1), ("flop_count_dp", 1), ("flop_count_hp", 1)), reported=False,
           label="FLOPs"),
    # real calls (recursion): warp-level calls that entered each depth
    Metric("calls", optional=True, label="calls"),
    Metric("max_call_depth", MAX, optional=True, label="call depth"),
]

#: what ``hypa diff`` compares of each launch, in its order (besides memory and time figures)
DIFF: list[str] = ["inst_executed", "thread_inst_executed", "flops", "branch_efficiency", "divergent_branch"]

#: the metrics of a memory instruction (``--memory-metrics``), also summed per source line and
#: per space and direction (``global_ld_sectors`` ...): the order of its JSON and CSV columns
MEMORY: list[Metric] = [
    Metric("requests", label="requests"),
    Metric("sectors", space="global local", label="32-byte sectors"),
    Metric("lines", space="global local", label="128-byte lines"),
    Metric("sectors_per_request", RATIO, (("sectors", 1),), "requests", space="global local", label="sect/req"),
    Metric("wavefronts", space="shared", label="wavefronts"),
    Metric("ideal_wavefronts", space="shared", reported=False, label="ideal wavefronts"),
    # a request needs more wavefronts than ideal when lanes ask one bank for different words
    Metric("bank_conflicts", terms=(("wavefronts", 1), ("ideal_wavefronts", -1)), space="shared",
           label="bank conflicts"),
]


def metric(name: str) -> Metric:
    """The declaration of ``name`` (a launch or memory metric)."""
    for m in (*LAUNCH, *MEMORY):
        if m.name == name:
            return m
    raise KeyError(name)


def columns() -> list[str]:
    """The launch metrics every launch reports: the CSV's metric columns, the keys a profile
    JSON must hold."""
    return [m.name for m in LAUNCH if m.reported and not m.optional]


def launch_values(counts: Mapping) -> dict[str, float]:
    """``Metrics.values`` of a launch (or CTA) from its counts."""
    return {m.name: m.value(counts) for m in LAUNCH if m.reported and (not m.optional or m.name in counts)}


def with_ratios(counts: Mapping) -> dict[str, float]:
    """``counts`` and every reported ratio their counts determine (the GPU harness's
    instrumented counts get the ratios the emulator reports, computed the same way)."""
    out = dict(counts)
    for m in LAUNCH:
        if m.kind == RATIO and m.reported and _has(m.denominator, counts) and all(_has(t, counts) for t, _ in m.terms):
            out[m.name] = m.value(counts)
    return out


def in_space(m: Metric, space: str) -> bool:
    """Whether memory metric ``m`` exists for accesses to ``space``."""
    return not m.space or space in m.space.split()


def memory_values(counts: Mapping, space: str) -> dict[str, float]:
    """The reported memory metrics of one instruction (or source line) in ``space``."""
    return {m.name: m.value(counts) for m in MEMORY if m.reported and in_space(m, space)}
