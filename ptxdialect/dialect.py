"""The ``ptx`` xDSL dialect, generated from the ISA table.

One operation class per ISA entry (``ptx.add``, ``ptx.ld``,
``ptx.cp.async.bulk.tensor`` ...), all sharing ``InstructionOp``'s shape:

* ``mods``  -- the modifiers as written (``".rn.f32"``);
* ``args``  -- the operands as PTX operand tuples (``operands.py``);
* ``guard`` -- the guard predicate ``@%p`` / ``@!%p``, if any;
* SSA operands and results -- empty in *register form* (what the front end
  builds: registers are named in ``args``); in *SSA form* (``ptx-to-ssa``)
  every register read is an operand and every register written a result, in
  the order ``register_roles`` gives, so ``args`` still says where each one
  appears in the statement;
* successors -- branch targets, the fall-through block last for a guarded
  branch; in SSA form each successor's block arguments follow the instruction
  operands, sized by ``succ_sizes``.

Directives (``.version``, ``.reg``, ``.loc`` ...), labels and functions are
operations too, so the printer can reproduce an equivalent file.  No PTX
operation is ``Pure``: counting must never depend on what a rewrite removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from typing_extensions import Self

from xdsl.dialects.builtin import UNKNOWN_LOC, ArrayAttr, IntAttr, StringAttr
from xdsl.ir import (
    Attribute,
    ErasedSSAValue,
    Block,
    Data,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
    var_successor_def,
)
from xdsl.irdl.operations import OpDef, get_accessors_from_op_def
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

if TYPE_CHECKING:  # xDSL's MLIR-syntax parser and printer load where that syntax is read or written
    from xdsl.parser import AttrParser, Parser, UnresolvedOperand
    from xdsl.printer import Printer

from . import declarations as decl
from . import isa
from .operands import (
    Operand,
    format_operand,
    format_reg_annotated,
    is_partial_write,
    iter_regs,
    parse_guard_text,
    parse_int_immediate,
    parse_operand_text,
)

# ---------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------


class PtxTextAttr(Data[tuple]):
    """A tuple the MLIR form prints as the PTX it stands for (``#ptx.args<"%r1, 4">``).

    Subclasses name the attribute and give ``to_text``/``from_text``; the
    grammars live in ``operands.py`` and ``declarations.py``."""

    to_text: ClassVar[Callable[[tuple], str]]
    from_text: ClassVar[Callable[[str], tuple]]

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple:
        with parser.in_angle_brackets():
            pos = parser.pos
            text = parser.parse_str_literal()
        try:
            return cls.from_text(text)
        except ValueError as e:
            parser.raise_error(f"invalid #{cls.name} text: {e}", pos, parser.pos)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(type(self).to_text(self.data))

    @classmethod
    def fast(cls, value: tuple) -> Self:
        """Build without re-verifying (front-end hot path)."""
        attr = object.__new__(cls)
        object.__setattr__(attr, "data", value)
        return attr


def _text_attr(name: str, doc: str, to_text: Callable[[tuple], str], from_text: Callable[[str], tuple]) -> type:
    cls = type(
        "".join(p.capitalize() for p in name.split(".")[1].split("_")) + "Attr",
        (PtxTextAttr,),
        {
            "name": name,
            "__doc__": doc,
            "__module__": __name__,
            "to_text": staticmethod(to_text),
            "from_text": staticmethod(from_text),
        },
    )
    return irdl_attr_definition(cls)


ArgsAttr = _text_attr(
    "ptx.args", "Operands of one statement as PTX text (``operands.py``).",
    lambda args: args_text(args), parse_operand_text)
GuardAttr = _text_attr(
    "ptx.guard", "A guard predicate ``(register, negated)``: ``#ptx.guard<\"!%p1\">``.",
    lambda g: guard_text(g), parse_guard_text)
ParamsAttr = _text_attr(
    "ptx.params", "Function parameters as PTX declarations.", decl.format_params, decl.parse_params)
VarDeclAttr = _text_attr(
    "ptx.var_decl", "A variable declaration as PTX (without ``;``).", decl.format_var_decl, decl.parse_var_decl)
RegNamesAttr = _text_attr(
    "ptx.reg_names", "Register names of a ``.reg`` declaration (``%r<8>, %x``).",
    decl.format_reg_names, decl.parse_reg_names)
WordsAttr = _text_attr(
    "ptx.words", "Qualifiers such as linkage (``.visible .weak``).", decl.format_words, decl.parse_words)
LabelsAttr = _text_attr("ptx.labels", "A label list (``L1, L2``).", decl.format_names, decl.parse_names)
IntsAttr = _text_attr("ptx.ints", "A list of integers.", decl.format_ints, decl.parse_ints)
DirectivesAttr = _text_attr(
    "ptx.directives", "Performance directives after a signature (``.maxntid 256, 1, 1; .noreturn``).",
    decl.format_directives, decl.parse_directives)


def print_modifiers(printer: Printer, mods: tuple[str, ...]) -> None:
    """``<rounding = ".rn", type = ".f32">``: each modifier in written order, with the
    role the ISA table gives it (``isa.ROLES``); modifiers without one print bare."""
    printer.print_string("<")
    for i, m in enumerate(mods):
        if i:
            printer.print_string(", ")
        role = isa.modifier_role(m)
        if role:
            printer.print_string(role + " = ")
        printer.print_string_literal(m)
    printer.print_string(">")


def parse_modifiers(parser: AttrParser) -> tuple[str, ...]:
    """What ``print_modifiers`` printed; a role must be the one the table gives."""
    parser.parse_punctuation("<")
    mods: list[str] = []
    if parser.parse_optional_punctuation(">"):
        return ()
    while True:
        start = parser.pos
        role = parser.parse_optional_identifier()
        if role is not None:
            parser.parse_punctuation("=")
        m = parser.parse_str_literal()
        if role is not None and isa.modifier_role(m) != role:
            actual = isa.modifier_role(m)
            what = f"a {actual} modifier" if actual else "a modifier without a role"
            parser.raise_error(f"'{m}' is {what}, not {role}", start, parser.pos)
        mods.append(m)
        if not parser.parse_optional_punctuation(","):
            break
    parser.parse_punctuation(">")
    return tuple(mods)


@irdl_attr_definition
class ModifiersAttr(Data[tuple]):
    """An instruction's modifiers in written order (``(".rn", ".f32")``), printed with
    their roles: ``#ptx.mods<rounding = ".rn", type = ".f32">``."""

    name = "ptx.mods"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple:
        return parse_modifiers(parser)

    def print_parameter(self, printer: Printer) -> None:
        print_modifiers(printer, self.data)

    @property
    def text(self) -> str:
        """As PTX writes them after the entry name: ``".rn.f32"``."""
        t = _MODIFIERS_TEXT.get(self.data)
        if t is None:
            t = _MODIFIERS_TEXT[self.data] = "".join(self.data)
        return t


_MODIFIERS_TEXT: dict[tuple[str, ...], str] = {}


_MODIFIERS_CACHE: dict[str, ModifiersAttr] = {}


def modifiers_attr(text: str) -> ModifiersAttr:
    """The interned attribute for modifiers written ``text`` (``".rn.f32"``)."""
    a = _MODIFIERS_CACHE.get(text)
    if a is None:
        a = _MODIFIERS_CACHE[text] = ModifiersAttr.new(split_mods(text))
    return a


@irdl_attr_definition
class RegType(ParametrizedAttribute, TypeAttribute):
    """The type of an SSA value holding a PTX register: ``!ptx.reg<"b32">``."""

    name = "ptx.reg"
    ptx_type: StringAttr

    @property
    def type_name(self) -> str:
        return self.ptx_type.data


@lru_cache(maxsize=None)
def reg_type(ptx_type: str) -> RegType:
    """The interned SSA type for a PTX register type (``".b32"`` or ``"b32"``)."""
    return RegType(StringAttr(ptx_type.lstrip(".")))


_STRING_CACHE: dict[str, StringAttr] = {}


def string_attr(s: str) -> StringAttr:
    """An interned ``StringAttr`` (modifier strings repeat across statements)."""
    a = _STRING_CACHE.get(s)
    if a is None:
        a = _STRING_CACHE[s] = StringAttr(s)
    return a


def args_text(args: tuple) -> str:
    """Operands as text for the MLIR form (scoped registers carry ``#scope``)."""
    return ", ".join(format_operand(a, format_reg_annotated) for a in args)


def guard_text(guard: tuple) -> str:
    reg, negated = guard
    return ("!" if negated else "") + format_reg_annotated(reg)


# ---------------------------------------------------------------------------
# Instructions
# ---------------------------------------------------------------------------

CC_REG: Operand = ("reg", "%cc", 0)
"""The carry flag written by ``add.cc`` and read by ``addc``: an implicit register."""


@lru_cache(maxsize=65536)
def split_mods(mods: str) -> tuple[str, ...]:
    if not mods:
        return ()
    first, *rest = mods.split(".")
    out = tuple("." + m for m in rest)
    # ``tcgen05.wait::ld.sync``: a ``::`` qualifier glued to the entry name
    return (first,) + out if first else out


def def_positions(instr: isa.Instr, mods: tuple[str, ...], args: tuple) -> range:
    """Positions in ``args`` of the operands the instruction writes (a call: its return parameters)."""
    if instr.kind == "call":
        return range(1) if args and args[0][0] == "paren" and len(args) > 1 else range(0)
    return range(min(instr.num_defs(mods), len(args)))


def _writable(node: Operand) -> bool:
    """A written operand: a register, a vector register's element ``v.x``, the sink ``_``,
    a pair ``p|q`` or a vector of those; a video destination with its merge selector ``d.h0``."""
    kind = node[0]
    if kind in ("reg", "sink", "pair", "elem") or kind == "vsel" and node[1][0] == "reg":
        return True
    if kind == "vec":
        return all(_writable(x) for x in node[1])
    return False


@lru_cache(maxsize=131072)
def register_roles(
    instr: isa.Instr, mods: tuple[str, ...], args: tuple, guard: tuple | None
) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """``(uses, defs)``: the registers a statement reads and writes, in SSA order.

    uses: the guard predicate first (if any), then registers read in textual
    order (including address bases and, for ``inout`` entries, the first
    operand), then the carry flag if read, then -- for a guarded statement --
    the previous value of every register it writes (a guarded write is a merge
    of old and new value); so does a statement that writes an element of a vector
    register (``mov.u32 v.x, %r1`` keeps the other elements).  defs: registers
    written in textual order (a vector register once per element written), then
    the carry flag if written.  Sinks ``_`` are neither.
    """
    dpos = def_positions(instr, mods, args)
    uses: list[Operand] = [guard[0]] if guard is not None else []
    defs: list[Operand] = []
    partial = False
    for i, a in enumerate(args):
        if i in dpos:
            for r in iter_regs(a):
                defs.append(r)
            if instr.inout:
                uses.extend(iter_regs(a))
            if not partial and a[0] != "reg" and is_partial_write(a):
                partial = True
        else:
            uses.extend(iter_regs(a))
    if instr.cc_use:
        uses.append(CC_REG)
    if ".cc" in mods:
        defs.append(CC_REG)
    if guard is not None or partial:
        uses.extend(defs)
    return tuple(uses), tuple(defs)


def keeps_old_values(guard: tuple | None, instr: isa.Instr, mods: tuple[str, ...], args: tuple) -> bool:
    """Whether a statement's last operands (SSA form) are the old values of the registers
    it writes (``register_roles``): it is guarded, or it writes an element of a vector register."""
    if guard is not None:
        return True
    return any(args[k][0] != "reg" and is_partial_write(args[k]) for k in def_positions(instr, mods, args))


class BlockTerminator:
    """Verification of an op that ends its block (``IsTerminator``) in time independent
    of the region's size.

    xDSL 0.74's ``Operation.verify`` counts the blocks of the region (a walk) for the
    last op of every block, to decide whether that op must be a terminator: quadratic in
    the blocks of a function (4,000 blocks took a minute).  For an op that *is* a
    terminator the answer is yes either way, so this does the same checks without the
    count; ops that are not terminators keep xDSL's verification."""

    def verify(self, verify_nested_ops: bool = True) -> None:
        op: Operation = self  # type: ignore[assignment]
        for operand in op.operands:
            if isinstance(operand, ErasedSSAValue):
                raise ValueError("Erased SSA value is used by the operation")
        block = op.parent
        region = None if block is None else block.parent
        if op.successors:
            if block is None or region is None:
                raise VerifyException(
                    f"Operation {op.name} with block successors does not belong to a block or a region")
            if block.last_op is not op:
                raise VerifyException(f"Operation {op.name} with block successors must terminate its parent block")
            for succ in op.successors:
                if succ.parent != region:
                    raise VerifyException(f"Operation {op.name} is branching to a block of a different region")
        try:
            op.verify_()
        except VerifyException as err:
            op.emit_error(f"Operation does not verify: {err}", err)


class InstructionOp(IRDLOperation):
    """Base of every PTX instruction operation (see the module docstring)."""

    srcs = var_operand_def()
    dsts = var_result_def()
    targets = var_successor_def()

    mods = prop_def(ModifiersAttr)
    args = prop_def(ArgsAttr)
    guard = opt_prop_def(GuardAttr)
    succ_sizes = opt_prop_def(IntsAttr)

    ISA: ClassVar[isa.Instr]

    # -- decoded views -------------------------------------------------------

    @property
    def spec(self) -> isa.Instr:
        """The ISA table entry of this instruction."""
        return self.ISA

    @property
    def modifiers(self) -> tuple[str, ...]:
        return self.properties["mods"].data  # type: ignore[union-attr]

    @property
    def types(self) -> tuple[str, ...]:
        """The type modifiers, in order (``cvt.rn.f32.s32``: ``.f32``, ``.s32``)."""
        return isa.type_modifiers(self.modifiers)

    def modifier(self, role: str) -> str | None:
        """The first modifier with ``role`` (``isa.ROLES``): ``op.modifier("rounding")``."""
        return next((m for m in self.modifiers if isa.modifier_role(m) == role), None)

    @property
    def operands_ast(self) -> tuple:
        return self.properties["args"].data  # type: ignore[union-attr]

    @property
    def guard_pred(self) -> tuple | None:
        g = self.properties.get("guard")
        return None if g is None else g.data  # type: ignore[union-attr]

    @property
    def opcode(self) -> str:
        """The full opcode as written, ``ld.global.v4.f32``."""
        return self.spec.name + self.properties["mods"].text  # type: ignore[union-attr]

    def register_roles(self) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
        return register_roles(self.spec, self.modifiers, self.operands_ast, self.guard_pred)

    def category(self) -> str:
        return isa.category(self.spec, self.modifiers)

    def arg_operands(self, k: int) -> list[SSAValue]:
        """SSA form: the operands standing for registers read inside textual operand ``k``."""
        args = self.operands_ast
        dpos = def_positions(self.spec, self.modifiers, args)
        ops = self.instruction_operands()
        i = 1 if self.guard_pred is not None else 0
        for j, a in enumerate(args):
            n = sum(1 for _ in iter_regs(a))
            is_use = j not in dpos or self.spec.inout
            if j == k:
                return list(ops[i : i + n]) if is_use else []
            if is_use:
                i += n
        return []

    def successor_operands(self, index: int) -> Sequence[SSAValue]:
        """SSA form: the block arguments passed to successor ``index``."""
        sizes = self.succ_sizes.data if self.succ_sizes is not None else ()
        if not sizes:
            return ()
        base = len(self.operands) - sum(sizes)
        start = base + sum(sizes[:index])
        return self.operands[start : start + sizes[index]]

    def instruction_operands(self) -> Sequence[SSAValue]:
        """SSA form: operands that are register reads (not successor arguments)."""
        sizes = self.succ_sizes.data if self.succ_sizes is not None else ()
        n = len(self.operands) - sum(sizes)
        return self.operands[:n]

    # -- verification --------------------------------------------------------

    def verify_(self) -> None:
        self._verify_against_isa()
        ops = self.instruction_operands()
        if not ops and not self.results:
            return  # register form
        uses, defs = self.register_roles()
        if len(ops) != len(uses) or len(self.results) != len(defs):
            raise VerifyException(
                f"'{self.name}' in SSA form expects {len(uses)} operands and "
                f"{len(defs)} results for '{args_text(self.operands_ast)}', got "
                f"{len(ops)} and {len(self.results)}"
            )
        sizes = self.succ_sizes.data if self.succ_sizes is not None else ()
        if sizes and len(sizes) != len(self.successors):
            raise VerifyException(f"'{self.name}': succ_sizes does not match successors")
        declared: dict[Operand, str] = {}
        for node, value in (*zip(uses, ops), *zip(defs, self.results)):
            if isinstance(value.type, RegType):
                declared[node] = "." + value.type.type_name
        why = isa.operand_type_error(self.spec, self.modifiers, self.operands_ast, declared.get)
        if why is not None:
            raise VerifyException(f"'{self.name}' '{self.opcode} {args_text(self.operands_ast)}': {why}")

    def _verify_against_isa(self) -> None:
        """What the front end checks of a statement, checked again from the same ISA table
        (IR can also come from the generic form or from a pass): the modifiers belong to
        this instruction, the operand count is in range, written operands are registers,
        and in SSA form the guard is a predicate."""
        spec = self.spec
        mods = self.properties["mods"].text  # type: ignore[union-attr]
        try:
            found, _ = isa.resolve_opcode(spec.name + mods)
        except isa.UnknownModifier as e:
            raise VerifyException(f"'{self.name}': unknown modifier '{e.modifier}' for '{spec.name}'") from None
        except isa.UnknownOpcode:
            raise VerifyException(f"'{self.name}': '{spec.name}{mods}' is not a PTX instruction") from None
        if found is not spec:
            raise VerifyException(f"'{self.name}': modifiers '{mods}' make this a '{found.name}', not a '{spec.name}'")
        args = self.operands_ast
        if spec.arity is not None:
            lo, hi = spec.arity
            if not lo <= len(args) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise VerifyException(f"'{self.name}' expects {want} operands, found {len(args)}: '{args_text(args)}'")
        for k in def_positions(spec, self.modifiers, args) if spec.kind != "call" else ():  # call: (ret params)
            if not _writable(args[k]):
                raise VerifyException(
                    f"'{self.name}': operand {k + 1} ('{args_text((args[k],))}') is written, so it must be a register")
        if self.guard_pred is not None and self.operands:
            t = self.operands[0].type
            if not (isinstance(t, RegType) and t.type_name == "pred"):
                raise VerifyException(f"'{self.name}': the guard must be a predicate register, found {t}")
        if spec.sync == "barrier" and spec.name.startswith(("bar", "barrier")) and args:
            bid = args[1] if ".red" in mods and len(args) > 1 else args[0]
            if bid[0] == "imm":
                try:
                    v = parse_int_immediate(bid[1])
                except (ValueError, IndexError):
                    v = None
                if v is not None and not 0 <= v <= 15:
                    raise VerifyException(f"'{self.name}': barrier {v} is out of range (a CTA has barriers 0 to 15)")

    # -- custom assembly format ---------------------------------------------
    #   [%d =] ptx.op <role = "mod", ...> "args" [if "guard"] [(%uses : types)]
    #          [[^bb(%a : t), ^bb]] [attr-dict] [: result types]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_modifiers(printer, self.modifiers)
        printer.print_string(" ")
        printer.print_string_literal(args_text(self.operands_ast))
        g = self.guard_pred
        if g is not None:
            printer.print_string(" if ")
            printer.print_string_literal(guard_text(g))
        ops = self.instruction_operands()
        if ops:
            printer.print_string(" (")
            printer.print_list(ops, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([o.type for o in ops], printer.print_attribute)
            printer.print_string(")")
        if self.successors:
            printer.print_string(" [")
            for i, succ in enumerate(self.successors):
                if i:
                    printer.print_string(", ")
                printer.print_block_name(succ)
                sargs = self.successor_operands(i)
                if sargs:
                    printer.print_string("(")
                    printer.print_list(sargs, printer.print_operand)
                    printer.print_string(" : ")
                    printer.print_list([o.type for o in sargs], printer.print_attribute)
                    printer.print_string(")")
            printer.print_string("]")
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        if self.results:
            printer.print_string(" : ")
            printer.print_list([r.type for r in self.results], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> "InstructionOp":
        mods = parse_modifiers(parser)
        args = parse_operand_text(parser.parse_str_literal())
        props: dict[str, Attribute] = {"mods": modifiers_attr("".join(mods)), "args": ArgsAttr.fast(args)}
        if parser.parse_optional_keyword("if"):
            props["guard"] = GuardAttr.fast(parse_guard_text(parser.parse_str_literal()))
        operands: list[SSAValue] = []
        if parser.parse_optional_punctuation("("):
            unresolved = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            operands = _resolve(parser, unresolved, types)
        successors: list[Block] = []
        sizes: list[int] = []
        if parser.parse_optional_punctuation("["):
            while True:
                successors.append(parser.parse_successor())
                n = 0
                if parser.parse_optional_punctuation("("):
                    unresolved = parser.parse_comma_separated_list(
                        parser.Delimiter.NONE, parser.parse_unresolved_operand
                    )
                    parser.parse_punctuation(":")
                    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
                    parser.parse_punctuation(")")
                    operands.extend(_resolve(parser, unresolved, types))
                    n = len(unresolved)
                sizes.append(n)
                if not parser.parse_optional_punctuation(","):
                    break
            parser.parse_punctuation("]")
            if any(sizes):
                props["succ_sizes"] = IntsAttr.fast(tuple(sizes))
        attrs = parser.parse_optional_attr_dict()
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation(":"):
            result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        return cls.create(
            operands=operands,
            result_types=result_types,
            properties=props,
            attributes=attrs,
            successors=successors,
        )


def _print_attrs(printer: Printer, op: Operation) -> None:
    if op.attributes:
        printer.print_string(" ")
        printer.print_attr_dict(op.attributes)


def _resolve(parser: Parser, unresolved: list[UnresolvedOperand], types: list[Attribute]) -> list[SSAValue]:
    if len(unresolved) != len(types):
        parser.raise_error(f"expected {len(unresolved)} types, got {len(types)}")
    return [parser.resolve_operand(u, t) for u, t in zip(unresolved, types)]


def _class_name(instr_name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._]", instr_name)) + "Op"


def _make_instruction_class(instr: isa.Instr) -> type[InstructionOp]:
    """The operation class of ``instr``: what ``irdl_op_definition`` makes, with the IRDL
    definition derived once per shape (plain or terminator) and renamed, since deriving it
    (``OpDef.from_pyrdl``) for each of the ~200 classes was a tenth of hypa's start-up."""
    namespace: dict[str, object] = {
        "name": instr.op_name,
        "ISA": instr,
        "__annotations__": {"ISA": ClassVar[isa.Instr]},
        "__doc__": f"PTX ``{instr.name}`` ({instr.kind}).",
        "__module__": __name__,
    }
    bases: tuple[type, ...] = (InstructionOp,)
    if instr.terminator:
        namespace["traits"] = traits_def(IsTerminator())
        bases = (BlockTerminator, InstructionOp)
    cls = type(_class_name(instr.name), bases, namespace)
    shape = _instruction_op_defs.get(instr.terminator)
    if shape is None:
        shape = _instruction_op_defs[instr.terminator] = OpDef.from_pyrdl(cls)
    # fresh traits per class (OpTraits can be added to); the rest is read-only and shared
    op_def = replace(shape, name=instr.op_name, traits=namespace.get("traits", None) or traits_def())
    for k, v in get_accessors_from_op_def(op_def, getattr(cls, "verify_", None)).items():
        setattr(cls, k, v)
    return cls  # type: ignore[return-value]


_instruction_op_defs: dict[bool, OpDef] = {}


INSTRUCTION_OPS: dict[str, type[InstructionOp]] = {
    i.name: _make_instruction_class(i) for i in isa.INSTRUCTIONS
}
"""ISA entry name -> generated operation class."""

# ---------------------------------------------------------------------------
# Module-level directives and functions
# ---------------------------------------------------------------------------


class DirectiveOp(IRDLOperation):
    """A statement that is not an instruction: never counted, never emulated."""


@irdl_op_definition
class VersionOp(DirectiveOp):
    """``.version 8.5``"""

    name = "ptx.version"
    version = prop_def(StringAttr)


@irdl_op_definition
class TargetOp(DirectiveOp):
    """``.target sm_90a, debug``"""

    name = "ptx.target"
    targets = prop_def(ArrayAttr[StringAttr])

    @property
    def target_names(self) -> list[str]:
        return [t.data for t in self.targets]

    @property
    def arch(self) -> str | None:
        for t in self.target_names:
            if t.startswith(("sm_", "compute_")):
                return t
        return None


@irdl_op_definition
class AddressSizeOp(DirectiveOp):
    """``.address_size 64``"""

    name = "ptx.address_size"
    size = prop_def(IntAttr)


@irdl_op_definition
class RawDirectiveOp(DirectiveOp):
    """A directive kept as normalized text: ``.file``, ``.section``, ``.alias``,
    ``.loc``, ``.pragma``, ``.callprototype``, ``.calltargets`` ...

    ``directive`` is the keyword (``.loc``), ``text`` the rest as it prints.
    """

    name = "ptx.directive"
    directive = prop_def(StringAttr)
    text = prop_def(StringAttr)


def _decl_field(i: int, doc: str) -> property:
    return property(lambda self: self.decl.data[i], doc=doc)


@irdl_op_definition
class VarOp(DirectiveOp):
    """A variable declaration in a state space, at module level or in a body.

    ``decl`` holds ``(linkage, space, attrs, type, name, dims, init)``:
    linkage a tuple like ``(".visible",)``; attrs the other qualifiers in order
    (``(".align", 4)``, ``(".v4",)``, ``(".attribute(.managed)",)``, ``(".ptr",)``);
    dims a tuple of ints with ``-1`` for ``[]``; init the initializer as PTX
    text or ``None``.
    """

    name = "ptx.var"
    decl = prop_def(VarDeclAttr)

    linkage = _decl_field(0, "``(\".visible\",)``")
    space = _decl_field(1, "``\".global\"``, ``\".shared\"`` ...")
    qualifiers = _decl_field(2, "``((\".align\", 4), (\".v4\",))``")
    ptx_type = _decl_field(3, "``\".b32\"``")
    var_name = _decl_field(4, "the name")
    dims = _decl_field(5, "array sizes, ``-1`` for ``[]``")
    init = _decl_field(6, "the initializer as PTX text, or None")

    @property
    def align(self) -> int | None:
        for q in self.qualifiers:
            if q[0] == ".align":
                return q[1]
        return None

    @property
    def vector_width(self) -> int:
        for q in self.qualifiers:
            if q[0] in (".v2", ".v4", ".v8"):
                return int(q[0][2:])
        return 1

    def size_bytes(self) -> int | None:
        """Bytes the variable occupies, or None for an unsized ``[]`` array."""
        n = isa.TYPE_BITS.get(self.ptx_type, 64) // 8 * self.vector_width
        for d in self.dims:
            if d < 0:
                return None
            n *= d
        return n


class RegisterTypes:
    """Declared register types of one function body, looked up by ``(name, scope)``;
    a range ``%r<N>`` is one entry, however large N is (ptxas accepts 2^31 - 1)."""

    def __init__(self) -> None:
        self.singles: dict[tuple[str, int], str | None] = {}
        self.ranges: dict[tuple[str, int], tuple[int, str | None]] = {}

    @classmethod
    def of(cls, func: "FuncOp", vectors: bool = True) -> "RegisterTypes":
        """Every ``.reg`` declaration and ``.reg`` parameter of ``func``; a vector register
        has its vector type (``.v2.u32``); with ``vectors=False`` it has none here."""
        types = cls()
        for plist in (func.params.data, func.ret_params.data if func.ret_params is not None else ()):
            for text, name, space, ptx_type, _align, _dims in plist:
                if space == ".reg":
                    rtype = isa.vector_reg_type(text.split(), ptx_type)
                    types.singles[(name, 0)] = rtype if vectors or rtype == ptx_type else None
        for op in func.body.walk():
            if isinstance(op, RegDeclOp):
                types.declare(op, vectors)
        return types

    def declare(self, op: "RegDeclOp", vectors: bool = True) -> None:
        quals = op.qualifiers.data if op.qualifiers is not None else ()
        t: str | None = op.ptx_type.data
        if quals:
            t = isa.vector_reg_type(quals, op.ptx_type.data) if vectors else None
        scope = op.scope.data
        for name, count in op.names.data:
            if count:
                self.ranges[(name, scope)] = (max(count, 0), t)
            else:
                self.singles[(name, scope)] = t

    def get(self, key: tuple[str, int], default: str | None = None) -> str | None:
        """The type of register ``(name, scope)``, or ``default``."""
        t = self.singles.get(key)
        if t is not None:
            return t
        name, scope = key
        stem = name.rstrip("0123456789")
        digits = name[len(stem):]
        hit = self.ranges.get((stem, scope)) if digits else None
        if hit is not None and int(digits) < hit[0] and (digits == "0" or digits[0] != "0") and hit[1] is not None:
            return hit[1]
        return default

    def lookup(self, node: Operand) -> str | None:
        """The type of a register operand node."""
        return self.get((node[1], node[2]))


@irdl_op_definition
class FuncOp(DirectiveOp):
    """``.entry`` (kernel) or ``.func`` (device function), with its body.

    ``kind``: ``".entry"`` or ``".func"``; ``linkage``: e.g. ``(".visible",)``;
    ``params`` and ``ret_params``: tuples of ``(decl_text, name)`` where
    ``decl_text`` is the parameter's declaration as it prints; ``directives``:
    performance directives and attributes after the signature, each
    ``(keyword, text)`` (``(".maxntid", "256, 1, 1")``, ``(".noreturn", "")``).
    An empty body region is a declaration (prototype).
    """

    name = "ptx.func"
    symbol = prop_def(StringAttr)  # not "sym_name": PTX may declare a function before defining it
    kind = prop_def(StringAttr)
    linkage = prop_def(WordsAttr)
    params = prop_def(ParamsAttr)
    ret_params = opt_prop_def(ParamsAttr)
    directives = prop_def(DirectivesAttr)
    body = region_def()

    @property
    def is_kernel(self) -> bool:
        return self.kind.data == ".entry"

    @property
    def is_declaration(self) -> bool:
        return not self.body.blocks

    @property
    def func_name(self) -> str:
        return self.symbol.data

    @property
    def param_names(self) -> list[str]:
        return [p[1] for p in self.params.data]

    def verify_(self) -> None:
        """Register form: every register operand fits its instruction's type
        (SSA form checks the operand types in ``InstructionOp.verify_``)."""
        if not self.body.blocks or "hypa.ssa" in self.attributes:
            return
        types = RegisterTypes.of(self)
        for op in self.body.walk():
            if isinstance(op, InstructionOp):
                why = isa.operand_type_error(op.spec, op.modifiers, op.operands_ast, types.lookup)
                if why is not None:
                    raise VerifyException(f"'{op.name}' '{op.opcode} {args_text(op.operands_ast)}': {why}")

    def directive(self, keyword: str) -> str | None:
        for k, text in self.directives.data:
            if k == keyword:
                return text
        return None

    def directive_location(self, keyword: str) -> tuple[str, int, int] | None:
        """(file, line, column) of directive ``keyword`` in the PTX the parser read; None where
        not given or the IR came from elsewhere.  Kept beside the op (``directive_locations``),
        not in its properties, so the printed IR stays as it was; ``clone_function`` copies it."""
        return self.__dict__.get("directive_locations", {}).get(keyword)


# ---------------------------------------------------------------------------
# Body structure
# ---------------------------------------------------------------------------


@irdl_op_definition
class LabelOp(DirectiveOp):
    """A label; it begins the block it names."""

    name = "ptx.label"
    label = prop_def(StringAttr)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.label.data)
        _print_attrs(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> "LabelOp":
        label = parser.parse_str_literal()
        return cls.create(properties={"label": string_attr(label)}, attributes=parser.parse_optional_attr_dict())


@irdl_op_definition
class RegDeclOp(DirectiveOp):
    """``.reg .b32 %r<100>, %x;`` -- ``names`` holds ``(name, count)`` pairs
    (count 0 for a single register), ``scope`` the scope id of registers it
    declares (0 at function level)."""

    name = "ptx.reg"
    ptx_type = prop_def(StringAttr)
    #: (name, count): count 0 is one register ``name``, n > 0 the range ``name<n>``,
    #: -1 the empty range ``name<0>`` that ptxas accepts
    names = prop_def(RegNamesAttr)
    scope = prop_def(IntAttr)
    qualifiers = opt_prop_def(WordsAttr)

    def registers(self):
        """Every ``(name, scope)`` this declaration introduces."""
        sc = self.scope.data
        for name, count in self.names.data:
            if count:
                for i in range(max(count, 0)):
                    yield (f"{name}{i}", sc)
            else:
                yield (name, sc)


@irdl_op_definition
class ScopeBeginOp(DirectiveOp):
    """``{`` opening a nested scope inside a body."""

    name = "ptx.scope_begin"


@irdl_op_definition
class ScopeEndOp(DirectiveOp):
    """``}`` closing a nested scope inside a body."""

    name = "ptx.scope_end"


@irdl_op_definition
class BranchTargetsOp(DirectiveOp):
    """``tbl: .branchtargets L1, L2;`` -- the label list a ``brx.idx`` jumps through."""

    name = "ptx.branchtargets"
    label = prop_def(StringAttr)
    target_labels = prop_def(LabelsAttr)


@irdl_op_definition
class FallthroughOp(BlockTerminator, DirectiveOp):
    """Control passes to the next block in layout order.  Not a PTX statement:
    it makes the CFG edge explicit and prints as nothing.  After ``ptx-inline`` it also
    ends a block at an indirect call (one successor per possible target, ``hypa.dispatch``)
    or a real call (``hypa.call``)."""

    name = "ptx.fallthrough"
    dest = var_successor_def()
    traits = traits_def(IsTerminator())
    srcs = var_operand_def()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.successors, printer.print_block_name)
        if self.operands:
            printer.print_string("(")
            printer.print_list(self.operands, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([o.type for o in self.operands], printer.print_attribute)
            printer.print_string(")")
        _print_attrs(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> "FallthroughOp":
        succs = [parser.parse_successor()]
        while parser.parse_optional_punctuation(","):
            succs.append(parser.parse_successor())
        operands: list[SSAValue] = []
        if parser.parse_optional_punctuation("("):
            unresolved = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            operands = _resolve(parser, unresolved, types)
        return cls.create(operands=operands, successors=succs, attributes=parser.parse_optional_attr_dict())


@irdl_op_definition
class ImplicitReturnOp(BlockTerminator, DirectiveOp):
    """The body ends without ``ret``/``exit``: control leaves the function.
    Not a PTX statement; prints as nothing."""

    name = "ptx.implicit_ret"
    traits = traits_def(IsTerminator())


@irdl_op_definition
class EntryValueOp(DirectiveOp):
    """SSA form: the value register ``reg`` holds when the function starts --
    the argument for a ``.reg`` parameter of a ``.func``, undefined for any
    other register (a read before every write on some path).  Prints as
    nothing in PTX."""

    name = "ptx.entry_value"
    reg = prop_def(StringAttr)
    res = result_def()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.reg.data)
        _print_attrs(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> "EntryValueOp":
        reg = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls.create(properties={"reg": StringAttr(reg)}, result_types=[t], attributes=attrs)

    @property
    def register(self) -> Operand:
        (node,) = parse_operand_text(self.reg.data)
        return node


DIRECTIVE_OPS = [
    VersionOp, TargetOp, AddressSizeOp, RawDirectiveOp, VarOp, FuncOp, LabelOp,
    RegDeclOp, ScopeBeginOp, ScopeEndOp, BranchTargetsOp, FallthroughOp, ImplicitReturnOp,
    EntryValueOp,
]

_clash = {o.name for o in DIRECTIVE_OPS} & {c.name for c in INSTRUCTION_OPS.values()}
assert not _clash, f"directive op names clash with instructions: {_clash}"

PTX = Dialect(
    "ptx",
    [*DIRECTIVE_OPS, *INSTRUCTION_OPS.values()],
    [ModifiersAttr, ArgsAttr, GuardAttr, ParamsAttr, VarDeclAttr, RegNamesAttr, WordsAttr, LabelsAttr, IntsAttr,
     DirectivesAttr, RegType],
)


def is_instruction(op: Operation) -> bool:
    """True for PTX instruction statements (what every count counts)."""
    return isinstance(op, InstructionOp)


def new_op(cls: type[Operation], properties: dict[str, Attribute], successors: Sequence[Block] = ()) -> Operation:
    """Create an op with no operands/results/regions cheaply (front-end hot path).

    Equivalent to ``cls.create(properties=..., successors=...)`` (a unit test
    holds the two equal), without the generic constructor's bookkeeping.
    """
    op = cls.__new__(cls)
    op.properties = properties
    op.attributes = {}
    op.location = UNKNOWN_LOC
    if successors:
        op.successors = list(successors)
    return op


def new_func(properties: dict[str, Attribute], region: Region) -> FuncOp:
    return FuncOp.create(properties=properties, regions=[region])  # type: ignore[return-value]
