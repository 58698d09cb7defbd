"""Instruction semantics for the emulator, one module per family.

Each module registers lowering rules with ``rules.rule(name, ...)``: a rule
receives an ``Emitter`` (operands by textual position, results, active lanes,
guard, memory helpers) and emits LLVM IR over 32 lanes.  Importing this
package registers every rule.
"""

from . import convert, floating, integer, memory, sync, warp  # noqa: F401
