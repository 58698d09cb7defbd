"""What ``ptxas`` checks about the names and shapes of operands, checked as a function is read.

``ptxas`` rejects a name nobody declared before it is used (``Unknown symbol``), a label used as
data, a variable or parameter where a register is required (``must be register``), a constant
or name written where the statement writes a register (``Result register required``), an
immediate address outside ``.local``, and a name that is not an identifier
(``setp.ge.s32`` as an operand).  The parser calls ``check_function`` once a body is read: it
walks each statement's operands once (most are plain registers and immediates, skipped at
the first test), so the cost stays linear in the function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from . import isa
from .operands import is_float_immediate

#: a PTX identifier (PTX ISA "Identifiers"): no dots
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+")
_PLAIN = frozenset(["reg", "imm", "sreg", "sink", "elem", "radd"])
#: statements whose plain (not bracketed) operands may name a variable, parameter or
#: function: its address (``mov``, ``cvta``, ``isspacep``, ``mapa`` ...); branches and calls
#: name labels and functions
_TAKES_ADDRESS = frozenset(["mov", "cvta", "isspacep", "mapa", "getctarank", "prefetch", "prefetchu", "createpolicy"])
_BRANCHES = frozenset(["bra", "brx.idx", "call"])
#: instruction kinds whose plain operands must be registers or constants
_VALUE_KINDS = frozenset(["arith", "logic", "sfu", "compare", "convert"])


def check_function(ops: Iterable, known: Callable[[str], bool], labels: set[str],
                   error: Callable[..., Exception],
                   arity: Callable[[str], tuple[int, int] | None] = lambda _n: None) -> None:
    """Raise ``error(message, text to point at[, opcode of the statement])`` for the first
    operand ``ptxas`` would reject.

    ``known(name)``: the name is a variable or function declared at module level before this
    function, or one of its parameters (the body's own variables count from their declaration
    on, as ``ptxas`` reads them); ``labels``: the function's labels, branch
    tables and call prototypes; ``arity(name)``: a declared function's (return values,
    parameters), which a direct call must match (None: not a function)."""
    facts: dict[tuple, tuple] = {}  # (op class, modifiers) -> what the checks need of the entry
    valid: set[str] = set()  # names already found to be identifiers
    declared: set[str] = set()  # the body's variables in scope, as their declarations are passed
    outer: list[set[str]] = []  # what was declared when each open { } scope began
    for op in ops:
        props = op.properties
        args_attr = props.get("args")
        if args_attr is None:
            if op.name == "ptx.scope_begin":
                outer.append(set(declared))
            elif op.name == "ptx.scope_end" and outer:
                declared = outer.pop()
            elif "decl" in props:
                declared.add(op.var_name)
            continue
        args = args_attr.data
        mods = props["mods"].data
        fact = facts.get((op.__class__, mods))
        if fact is None:
            fact = facts[(op.__class__, mods)] = _facts(op.ISA, mods)
        defs, type_error, floats, name = fact[0], fact[1], fact[2], fact[3]
        if type_error is not None:
            raise error(type_error, "", op.opcode)
        for k in (range(len(args)) if fact[9] else fact[7]):
            if k < len(args) and args[k][0] == "imm" and is_float_immediate(args[k][1]):
                raise error(f"'{op.opcode}' operand {k + 1} is the floating-point constant {args[k][1]}: an integer "
                            f"operand needs an integer constant", args[k][1], op.opcode)
        for k, bits in fact[8]:
            if k < len(args) and args[k][0] == "sreg":
                have = 64 if args[k][1] in isa.SPECIAL_REGISTERS_64 else 32
                if have != bits:
                    raise error(f"'{op.opcode}' operand {k + 1}: {args[k][1]} is a {have}-bit special register, the "
                                f"instruction's type has {bits} bits (convert it with cvt first)", args[k][1], op.opcode)
        if name == "call":
            _check_call(op, args, arity, error)
        for k in floats:
            if k < len(args) and args[k][0] == "imm" and not is_float_immediate(args[k][1]):
                raise error(f"'{op.opcode}' operand {k + 1} is the integer constant {args[k][1]}: a floating-point "
                            f"operand needs a floating-point constant ({args[k][1]}.0, or its bits as 0f.../0d...)",
                            args[k][1], op.opcode)
        k = -1
        for node in args:
            k += 1
            kind = node[0]
            if kind == "reg" or (k >= defs and kind in _PLAIN):
                continue
            if k < defs:
                if kind in ("reg", "sink", "elem"):
                    continue
                for leaf in _syms(node):
                    _identifier(leaf[1], valid, error)
                if kind in ("imm", "sym", "addr", "sreg"):
                    raise error(f"'{op.opcode}' writes operand {k + 1}: it must be a register, not a "
                                f"{_what(node)}", _text(node))
            if kind == "addr":
                base = node[1]
                if base[0] == "reg":
                    continue
                if base[0] == "imm" and fact[6]:
                    raise error(f"'{op.opcode}': an immediate address is allowed only in the .local state space",
                                base[1])
            for leaf in _syms(node):
                n = leaf[1]
                if n not in valid:
                    _identifier(n, valid, error)
                if n in labels:
                    if not fact[4] or kind == "addr":
                        raise error(f"label '{n}' used as an operand of '{op.opcode}': a label is only a branch "
                                    f"target", n)
                    continue
                if fact[4] and name != "call":
                    continue  # an undefined branch target: the parser's own message, once it links blocks
                if not known(n) and n not in declared:
                    raise error(f"use of undeclared symbol '{n}' (variables, parameters and functions must be "
                                f"declared before they are used)", n)
                if kind == "sym" and (fact[5] or fact[10]) and arity(n) is None and n != "WARP_SZ":
                    # (WARP_SZ is PTX's constant 32, an immediate wherever one may stand)
                    # (a function's name is its address, which ptxas takes anywhere)
                    raise error(f"'{op.opcode}' operand {k + 1} must be a register or a constant, not the symbol "
                                f"'{n}' (take its address with mov first)", n, op.opcode)


def _facts(spec: isa.Instr, mods: tuple[str, ...]) -> tuple:
    """(operands written, two-types error, float operand positions, name, is a branch or call,
    takes no symbol as a value, a memory access outside .local, integer operand positions,
    (position, bits) of sized operands, a barrier: every constant an integer, a plain access:
    its data operands are registers or constants) of one entry and modifiers."""
    defs = spec.defs
    for m, d in spec.defs_with:
        if m in mods:
            defs = d
    name = spec.name
    return (defs, isa.type_count_error(spec, mods), isa.float_operand_positions(spec, mods), name,
            name in _BRANCHES, spec.kind in _VALUE_KINDS and name not in _TAKES_ADDRESS,
            name in isa.MEMORY_FACTS and isa.state_space(spec, mods) != "local",
            isa.integer_operand_positions(spec, mods), isa.sized_operand_positions(spec, mods),
            spec.sync in ("barrier", "warp-barrier"),
            name in ("ld", "ldu", "st", "atom", "red"))


def _identifier(n: str, valid: set[str], error) -> None:
    if not _IDENTIFIER.fullmatch(n):
        raise error(f"'{n}' is not an operand (a PTX name has no '.'; is an instruction misplaced?)", n)
    valid.add(n)


def _check_call(op, args: tuple, arity, error) -> None:
    """``call (rets), f, (params)``: as many of each as ``f`` declares."""
    k = next((i for i, a in enumerate(args) if a[0] == "sym"), None)
    if k is None:
        return  # an indirect call through a register: its prototype says
    want = arity(args[k][1])
    if want is None:
        return
    rets = len(args[k - 1][1]) if k > 0 and args[k - 1][0] == "paren" else 0
    params = len(args[k + 1][1]) if k + 1 < len(args) and args[k + 1][0] == "paren" else 0
    if (rets, params) != want:
        raise error(f"call of '{args[k][1]}' with {rets} return value(s) and {params} parameter(s); it declares "
                    f"{want[0]} and {want[1]}", args[k][1])


def _syms(node: tuple):
    kind = node[0]
    if kind == "sym":
        yield node
    elif kind in ("addr", "not"):
        yield from _syms(node[1])
    elif kind in ("vec", "brk", "paren"):
        for o in node[1]:
            yield from _syms(o)
    elif kind == "pair":
        yield from _syms(node[1])
        yield from _syms(node[2])


def _what(node: tuple) -> str:
    return {"imm": "constant", "sym": "symbol", "addr": "memory operand", "sreg": "special register"}[node[0]]


def _text(node: tuple) -> str:
    kind = node[0]
    if kind in ("imm", "sym", "sreg"):
        return node[1]
    if kind == "addr":
        return "["
    return ""
