"""The lowering rules, one module per instruction family.

Each module registers its rules with ``rules.rule(name, ...)`` under ISA entry names: a
rule receives an ``Emitter`` (operands by textual position, results, active lanes, guard,
memory helpers) and emits LLVM IR over 32 lanes.  Importing this package registers every
rule.

- ``integer``: integer arithmetic, logic, comparison, selection, bit manipulation (and
  the arithmetic entries shared with floating point, which dispatch on the type)
- ``floating``: floating-point arithmetic, min/max, special functions, testp, compare
- ``convert``: mov, cvta, isspacep, cvt, cvt.pack
- ``memory``: ld, st, atomics and reductions, cp.async, cache hints
- ``cross_lane``: shfl, vote, match, redux, activemask, elect
- ``matrix``: wmma, mma, ldmatrix, stmatrix, movmatrix
- ``sync``: barriers and fences
- ``video``: the scalar and SIMD video instructions (``vadd`` ... ``vset4``)
- ``mbarrier``: mbarrier objects; mapa, getctarank (a cluster of one CTA)
- ``bulk_copy``: cp.async.bulk, cp.reduce.async.bulk, st.async, red.async, st.bulk
- ``texture``: texture and surface instructions (through the texture callback)
"""

from . import bulk_copy, convert, cross_lane, floating, integer, matrix, mbarrier, memory, sync, texture, video  # noqa: F401
