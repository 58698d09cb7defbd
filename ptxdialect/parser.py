"""PTX text -> ``ptx`` dialect in register form.

A recursive-descent parser over the tokens of ``lexer.py``.  It builds one
operation per statement, splits bodies into blocks at labels and after every
terminator (``bra``, ``brx.idx``, ``ret``, ``exit``, ``trap``), makes
fall-through edges explicit, resolves registers against their (possibly
nested) declarations, and validates opcodes and modifiers against the ISA
table.  Errors are ``PTXSyntaxError`` with file, line and column and say what
was expected and what was found.

Speed (``benchmarks/parse.py``).  Tokens are lexed lazily into a small buffer
that is emptied at every statement boundary.  Inside a function body the
common statements (instructions, labels, ``.loc``, ``.param`` declarations of
call sequences) first go through a *fast path*: one regular expression splits
the statement, and each operand text is looked up in a per-scope cache
(``"%r5"``, ``"[%rd3+4]"`` -> operand tuple) that register declarations
pre-fill; a miss is classified by a small regular expression, or else parsed
with the token parser.  The fast path never reports an error: whenever
something does not match or resolve it backs out and the token parser reads
the statement, so both paths build the same IR and give the same diagnostics
(``tests/unit/test_fastpath.py`` checks it).  Operations are made with
``new_op``, linked into their blocks directly, and the cyclic GC is paused
while the (entirely live) IR is built.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence

from xdsl.dialects.builtin import UNKNOWN_LOC, ArrayAttr, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, Use

from . import isa, symbols
from .declarations import LINKAGE, OPAQUE_TYPES, VAR_SPACES, VECTORS
from .diagnostics import PTXError, PTXSyntaxError, SourceFile
from .dialect import (
    INSTRUCTION_OPS,
    AddressSizeOp,
    FuncOp,
    ArgsAttr,
    BranchTargetsOp,
    FallthroughOp,
    GuardAttr,
    ImplicitReturnOp,
    LabelOp,
    RawDirectiveOp,
    RegDeclOp,
    ScopeBeginOp,
    ScopeEndOp,
    TargetOp,
    VarDeclAttr,
    WordsAttr,
    ParamsAttr,
    DirectivesAttr,
    LabelsAttr,
    RegNamesAttr,
    VarOp,
    VersionOp,
    new_func,
    new_op,
    modifiers_attr,
    string_attr,
)
from .lexer import ERROR_KINDS, EOF, NAME, NUM, PUNCT, STR, lex_error, match_token
from .operands import is_float_immediate, parse_int_immediate
from . import limits

PERF_DIRECTIVES = frozenset(
    ".maxntid .reqntid .minnctapersm .maxnctapersm .maxnreg .noreturn .explicitcluster "
    ".reqnctapercluster .maxclusterrank .blocksareclusters .abi_preserve .abi_preserve_control "
    ".alias".split()
)
LABEL_DIRECTIVES = frozenset([".branchtargets", ".calltargets", ".callprototype"])
#: instructions whose ops keep their source position (``op.location``): a launch's error at
#: one names it (a barrier's thread count beyond the CTA's); the rest keep none (speed)
_LOCATED_OPCODES = frozenset(["bar", "barrier"])
#: directives a body may hold but module level may not, and the reverse
_BODY_ONLY = frozenset([".reg", ".loc"]) | LABEL_DIRECTIVES
_MODULE_ONLY = frozenset([".version", ".target", ".address_size", ".section", ".entry", ".func", ".alias"])
_TARGET_RE = re.compile(r"(?:sm|compute)_\d+[af]?|debug|map_f64_to_f32|texmode_unified|texmode_independent")
_VERSION_RE = re.compile(r"\d+\.\d+")

Tok = tuple[str, str, int]


def _join(tokens: list[Tok]) -> str:
    """Normalized text of a token run: single spaces, none inside brackets."""
    out: list[str] = []
    prev = ""
    for _, text, _ in tokens:
        if out and not (
            text in (",", ";", ")", "]", "}", ">", ":") or prev in ("(", "[", "{", "<", "!", "@")
            or (text in ("(", "[", "<") and prev not in (",", "=", ":"))
        ):
            out.append(" ")
        out.append(text)
        prev = text
    return "".join(out)


def _fast_str(s: str) -> StringAttr:
    """A ``StringAttr`` without the verifier call (the value is a plain str)."""
    a = object.__new__(StringAttr)
    object.__setattr__(a, "data", s)
    return a


# ---------------------------------------------------------------------------
# Fast path: one regular expression per common one-line statement
# ---------------------------------------------------------------------------

_FAST_RE = re.compile(
    r"""
    [ \t\r\n]*(?://[^\n]*(?![^\n])[ \t\r\n]*)*
    (?:
      (?P<ins>(?:@(?P<neg>!?)(?P<g>%?[A-Za-z_$][\w$]*)[ \t]+)?
        (?P<op>[a-z][\w$]*(?:(?:\.|::)[\w$]+)*)
        (?:\s+(?P<args>[^;"/\s][^;"/]*)?)?;)
     |(?P<lbl>[$A-Za-z_][\w$]*)[ \t]*:(?!:)
        (?!\s*(?:(?://[^\n]*(?![^\n])|/\*.*?\*/)\s*)*\.(?:branchtargets|calltargets|callprototype)(?![\w$]))
     |\.loc[ \t]+(?P<loc>[^\n;/]*)
     |\.param[ \t]+(?:\.align[ \t]+(?P<palign>[0-9]+)[ \t]+)?(?P<ptype>\.[a-z][\w]*)[ \t]+
        (?P<pname>[A-Za-z_$][\w$]*)(?:\[(?P<pdim>[0-9]+)\])?[ \t]*(?P<pdecl>;)
    )
    """,
    re.X | re.S | re.A,
)
_fast_match = _FAST_RE.match
_LOC3_RE = re.compile(r"\s*(\d+)\s+(\d+)\s+(\d+)\s*")
_LOC_INLINED_RE = re.compile(
    r"\s*(\d+)\s+(\d+)\s+(\d+)\s*,\s*function_name\s+([$A-Za-z_][\w$]*)\s*,"
    r"\s*inlined_at\s+(\d+)\s+(\d+)\s+(\d+)\s*",
    re.A,
)


_NAME = r"[A-Za-z_$%][\w$]*(?:(?:\.|::)[\w$]+)*"
_INT = r"(?:0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?|[0-9]+[uU]?)(?![\w$.])"
_NUM = (
    r"(?:0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|0[xX][0-9a-fA-F]+[uU]?|0[bB][01]+[uU]?"
    r"|[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+[uU]?)(?![\w$.])"
)
#: the operand shapes the fast path classifies without tokens (anything else
#: goes to the token parser); groups: name [| name2] [+off], number, !name,
#: [base+off], {vector}
_OPERAND_RE = re.compile(
    rf"""\s*(?:
      (?P<n>{_NAME})(?:\s*\|\s*(?P<n2>{_NAME})|\s*\+\s*(?P<sneg>-?)\s*(?P<soff>{_INT})|\s*-\s*(?P<smin>{_INT}))?
     |(?P<ineg>-?)\s*(?P<num>{_NUM})
     |!\s*(?P<nn>{_NAME})
     |\[\s*(?P<an>{_NAME})\s*(?:\+\s*(?P<aneg>-?)\s*(?P<aoff>{_INT})|-\s*(?P<amin>{_INT}))?\s*\]
     |\{{(?P<vec>[^{{}}]*)\}}
     |\((?P<paren>[^()]*)\)
    )\s*""",
    re.X | re.A,
)
_operand_match = _OPERAND_RE.fullmatch
_address_match = re.compile(
    rf"\[\s*({_NAME})\s*(?:\+\s*(-?)\s*({_INT})|-\s*({_INT}))?\s*\]", re.A
).fullmatch
_number_match = re.compile(rf"-?{_NUM}", re.A).fullmatch  # no space after '-': the text is the node
_NUM_START = frozenset("-0123456789")


def _split_operands(a: str) -> list[str] | None:
    """``a.split(",")`` keeping ``{..}`` vectors and ``(..)`` lists whole
    (``None``: unbalanced).

    The parts joined with ``","`` give ``a`` back, so each part's offset is the
    running sum of the lengths before it."""
    parts: list[str] = []
    cur = ""
    depth = 0
    for r in a.split(","):
        depth += r.count("{") + r.count("(") - r.count("}") - r.count(")")
        cur = cur + "," + r if cur else r
        if depth < 0:
            return None
        if depth == 0:
            parts.append(cur)
            cur = ""
    return None if depth else parts


class _Scopes:
    """Register declarations visible at a point of a body, innermost last."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, dict[str, str], dict[str, tuple[int, str]]]] = []
        self.next_id = 0
        self.cache: dict[str, tuple[int, str] | None] = {}

    def push(self) -> int:
        sid = self.next_id
        self.next_id += 1
        self.stack.append((sid, {}, {}))
        self.cache = {}
        return sid

    def pop(self) -> None:
        self.stack.pop()
        self.cache = {}

    @property
    def current(self) -> int:
        return self.stack[-1][0]

    def declare(self, name: str, count: int, ptx_type: str) -> None:
        sid, singles, ranges = self.stack[-1]
        if count:
            ranges[name] = (count, ptx_type)
        else:
            singles[name] = ptx_type
        self.cache.pop(name, None)
        if count:
            self.cache = {}

    def declared_here(self, name: str, count: int) -> bool:
        """True when ``name`` (or a register of the range ``name<count>``)
        is already declared in the innermost scope."""
        _, singles, ranges = self.stack[-1]
        if count:
            if name in ranges:
                return True
            return any(
                n[len(name):].isdigit() and n.startswith(name) and int(n[len(name):]) < count
                and (n[len(name):] == "0" or not n[len(name):].startswith("0"))
                for n in singles
            )
        if name in singles:
            return True
        stem = name.rstrip("0123456789")
        digits = name[len(stem):]
        if digits and stem in ranges:
            return int(digits) < ranges[stem][0] and (digits == "0" or not digits.startswith("0"))
        return False

    def lookup(self, name: str) -> tuple[int, str] | None:
        """``(scope id, type)`` of the declaration ``name`` refers to."""
        hit = self.cache.get(name, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        found = None
        stem = name.rstrip("0123456789")
        digits = name[len(stem):]
        for sid, singles, ranges in reversed(self.stack):
            t = singles.get(name)
            if t is not None:
                found = (sid, t)
                break
            if digits and stem in ranges:
                count, t = ranges[stem]
                if int(digits) < count and (digits == "0" or not digits.startswith("0")):
                    found = (sid, t)
                    break
        self.cache[name] = found
        return found


class PTXParser:
    def __init__(self, text: str, filename: str = "<stdin>", line_offset: int = 0, fast: bool = True):
        self.src = SourceFile(text, filename, line_offset)
        self.text = text
        # lazily lexed tokens of the current statement: toks[i] is the next one
        self.toks: list[Tok] = []
        self.i = 0
        self.pos = 0  # where lexing continues
        self.prev_end = 0  # end offset of the last consumed token
        self.scopes = _Scopes()
        self.fast = fast
        self._opcodes: dict[str, tuple] = {}
        # Operand cache of the fast path: operand text -> node, '@' + name ->
        # guard register.  One layer per open scope (innermost is
        # ``_operand_cache``); ``_shadow`` holds the names declared in nested
        # scopes, which outer layers must not answer for.
        self._operand_cache: dict[str, tuple] = {}
        self._layers: list[dict[str, tuple]] = []
        self._shadow: list[str] = []
        self._shadow_marks: list[int] = []
        self._loc_cache: dict[str, StringAttr] = {}
        self._closing_angle = False
        self._address_size: int | None = None
        self._version: str | None = None
        self._const_bytes = 0  # module-level .const data so far (limits.CONST_BYTES)
        self._defined_funcs: dict[str, Tok] = {}
        #: variables and functions declared at module level so far (symbols.check_function)
        self._module_names: set[str] = {"WARP_SZ"}
        self._module_vars: dict[str, tuple] = {}  # module-level variable -> its linkage
        #: (return values, parameters) of each function declared so far: calls must match
        self._arity: dict[str, tuple[int, int]] = {}
        self._nested = 0  # depth of [ ], { }, ( ) around the operand being read

    # -- token helpers -------------------------------------------------------

    def _lex(self) -> Tok:
        m = match_token(self.text, self.pos)
        kind = m.lastgroup
        if kind == "eof":
            tok: Tok = (EOF, "", len(self.text))
        else:
            text = m.group(kind)  # type: ignore[arg-type]
            if kind in ERROR_KINDS:
                raise lex_error(self.src, kind, text, m.start(kind))  # type: ignore[arg-type]
            self.pos = end = m.end()
            tok = (kind, text, end - len(text))  # type: ignore[assignment]
        self.toks.append(tok)
        return tok

    def _sync(self) -> None:
        """At a statement boundary: drop the token buffer, un-reading any
        lookahead (lexing is a pure function of the position)."""
        toks = self.toks
        if toks:
            if self.i < len(toks):
                self.pos = toks[self.i][2]
            self.toks = []
            self.i = 0

    def error(self, message: str, tok: Tok | None = None) -> PTXSyntaxError:
        t = tok if tok is not None else self.peek()
        return PTXSyntaxError(self.src, t[2], message)

    def error_at(self, offset: int, message: str) -> PTXSyntaxError:
        return PTXSyntaxError(self.src, offset, message)

    def peek(self, k: int = 0) -> Tok:
        j = self.i + k
        toks = self.toks
        while len(toks) <= j:
            if toks and toks[-1][0] == EOF:
                return toks[-1]
            self._lex()
        return toks[j]

    def advance(self) -> Tok:
        t = self.peek()
        if t[0] != EOF:
            self.i += 1
            self.prev_end = t[2] + len(t[1])
        return t

    def at(self, text: str) -> bool:
        t = self.peek()
        return t[1] == text and t[0] != STR

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Tok:
        t = self.peek()
        if t[1] != text or t[0] == STR:
            raise self.error(f"expected {what or repr(text)}, found {self._describe(t)}")
        return self.advance()

    def expect_name(self, what: str) -> Tok:
        """A name that is not a directive keyword (no leading dot)."""
        t = self.peek()
        if t[0] != NAME or t[1].startswith("."):
            raise self.error(f"expected {what}, found {self._describe(t)}")
        return self.advance()

    @staticmethod
    def _describe(t: Tok) -> str:
        return "end of file" if t[0] == EOF else repr(t[1])

    def _int(self, what: str) -> int:
        if self._starts_expression():
            return self._const_expr(what)
        neg = self.accept("-")
        t = self.peek()
        if t[0] != NUM:
            raise self.error(f"expected {what}, found {self._describe(t)}")
        try:
            v = parse_int_immediate(t[1])
        except ValueError:
            raise self.error(f"expected {what}, found {t[1]!r}", t) from None
        self.advance()
        return -v if neg else v

    # -- constant expressions (PTX ISA 4.6: C's integer operators, 64-bit) -----

    def _starts_expression(self) -> bool:
        """Whether an integer constant expression (more than one literal) starts here."""
        t = self.peek()
        if t[0] == PUNCT:
            if t[1] in ("~", "("):
                return self._is_expr_operand(self.peek(1)) or self.peek(1)[1] in ("~", "(", "-", "!")
            if t[1] in ("-", "!"):
                n = self.peek(1)
                return n[1] in ("(", "~") or (n[0] == NUM and self.peek(2)[1] in _BINARY_START)
            return False
        n = self.peek(1)
        if n[0] != PUNCT or n[1] not in _BINARY_START:
            return False
        return self._is_expr_operand(t) and (n[1] != ">" or not self._closing_angle or self.peek(2)[1] in (">", "="))

    @staticmethod
    def _is_expr_operand(t: Tok) -> bool:
        return t[0] == NUM and not is_float_immediate(t[1])

    def _const_expr(self, what: str) -> int:
        v = self._ternary(what)
        v &= (1 << 64) - 1
        return v - (1 << 64) if v >> 63 else v

    def _ternary(self, what: str) -> int:
        cond = self._binary(0, what)
        if self.accept("?"):
            a = self._ternary(what)
            self.expect(":", "':' of a '?:' constant expression")
            b = self._ternary(what)
            return a if cond else b
        return cond

    def _binary_operator(self) -> str | None:
        t, n = self.peek(), self.peek(1)
        if t[0] != PUNCT:
            return None
        two = t[1] + n[1] if n[0] == PUNCT and n[2] == t[2] + 1 else ""
        if two in _OPERATORS_2:
            return two
        if t[1] == ">" and self._closing_angle:
            return None
        return t[1] if t[1] in _OPERATORS_1 else None

    def _binary(self, min_prec: int, what: str) -> int:
        lhs = self._unary(what)
        while True:
            op = self._binary_operator()
            if op is None or _PRECEDENCE[op] < min_prec:
                return lhs
            tok = self.peek()
            for _ in op:
                self.advance()
            rhs = self._binary(_PRECEDENCE[op] + 1, what)
            lhs = _apply(op, lhs, rhs, lambda m: self.error(m, tok))

    def _unary(self, what: str) -> int:
        t = self.peek()
        if t[0] == PUNCT and t[1] in ("-", "~", "!", "+"):
            self.advance()
            v = self._unary(what)
            return {"-": -v, "~": ~v, "!": int(not v), "+": v}[t[1]]
        if t[0] == PUNCT and t[1] == "(":
            self.advance()
            v = self._ternary(what)
            self.expect(")", "')' closing the constant expression")
            return v
        if not self._is_expr_operand(t):
            raise self.error(f"expected {what} (an integer constant expression), found {self._describe(t)}")
        self.advance()
        try:
            return parse_int_immediate(t[1])
        except ValueError:
            raise self.error(f"expected {what}, found {t[1]!r}", t) from None

    def _same_line(self, a: Tok, b: Tok) -> bool:
        end = a[2] + len(a[1])
        return self.text.find("\n", end, b[2]) < 0

    def _rest_of_line(self, start: Tok) -> list[Tok]:
        """Tokens after ``start`` up to the end of its line (``.loc``, ``.file``)."""
        out: list[Tok] = []
        prev = start
        while self.peek()[0] != EOF and self._same_line(prev, self.peek()):
            prev = self.advance()
            out.append(prev)
        return out

    def _until(self, *stops: str) -> list[Tok]:
        """Tokens up to (not including) one of ``stops`` at bracket depth 0."""
        out: list[Tok] = []
        opened: list[Tok] = []
        while True:
            t = self.peek()
            if t[0] == EOF:
                if opened:
                    o = opened[-1]
                    raise self.error(f"expected '{_CLOSER[o[1]]}' to close the {o[1]!r} opened here before end of file", o)
                raise self.error_at(self.prev_end, f"expected {' or '.join(repr(s) for s in stops)} before end of file")
            if t[0] == PUNCT:
                if not opened and t[1] in stops:
                    return out
                if t[1] in "{[(":
                    opened.append(t)
                elif t[1] in "}])":
                    if not opened:
                        raise self.error(f"unmatched {t[1]!r}")
                    o = opened.pop()
                    if _CLOSER[o[1]] != t[1]:
                        raise self.error(f"expected {_CLOSER[o[1]]!r} to close the {o[1]!r} at column {self.src.location(o[2])[1]}, found {t[1]!r}")
            out.append(self.advance())

    # -- module --------------------------------------------------------------

    def parse_module(self) -> ModuleOp:
        ops: list[Operation] = []
        t = self.peek()
        if t[1] != ".version" or t[0] != NAME:
            raise self.error(f"expected '.version' at the start of a PTX module, found {self._describe(t)}")
        seen_target = False
        header_seen: set[str] = set()
        body_started = False
        while True:
            self._sync()
            t = self.peek()
            kind, d = t[0], t[1]
            if kind == EOF:
                break
            if not seen_target and kind == NAME and d not in (".version", ".target"):
                raise self.error(f"expected '.target' after '.version', found {self._describe(t)} (ptxas needs the "
                                 f"target before anything else)")
            if kind != NAME:
                if d == "}":
                    raise self.error("unmatched '}' at module level")
                raise self.error(f"expected a directive, found {self._describe(t)}")
            if d in (".version", ".target", ".address_size"):
                if d in header_seen or body_started:
                    raise self.error(f"{d!r} may appear once, in the module's header (before any declaration)")
                header_seen.add(d)
            elif kind == NAME:
                body_started = True
            if d == ".param" and kind == NAME:
                raise self.error("'.param' variables may not be declared at module scope (only in a function's "
                                 "parameter list or body)")
            if d == ".version":
                self.advance()
                v = self.peek()
                if v[0] != NUM or not _VERSION_RE.fullmatch(v[1]):
                    raise self.error(f"expected a version number such as 8.5 after '.version', found {self._describe(v)}")
                self.advance()
                self._version = v[1]
                ops.append(new_op(VersionOp, {"version": StringAttr(v[1])}))
            elif d == ".target":
                self.advance()
                names = [self._target_name()]
                while self.accept(","):
                    names.append(self._target_name())
                ops.append(new_op(TargetOp, {"targets": ArrayAttr([StringAttr(n) for n in names])}))
                seen_target = True
            elif d == ".address_size":
                self.advance()
                n_tok = self.peek()
                n = self._int("an address size (32 or 64)")
                if n not in (32, 64):
                    raise self.error(f"address size must be 32 or 64, found {n}", n_tok)
                ops.append(new_op(AddressSizeOp, {"size": IntAttr(n)}))
                self._address_size = n
            elif d == ".file":
                self.advance()
                ops.append(self._raw(d, self._rest_of_line(t)))
            elif d == ".section":
                ops.append(self._section())
            elif d in (".alias", ".pragma"):
                self.advance()
                toks = self._until(";")
                if d == ".pragma":
                    self._check_pragma(toks, t)
                self.expect(";")
                ops.append(self._raw(d, toks))
            elif d in LINKAGE or d in (".entry", ".func") or d in VAR_SPACES:
                new = self._declaration(module_level=True)
                ops.extend(new)
                for op in new:
                    if isinstance(op, VarOp) and op.space == ".const" and ".extern" not in op.decl.data[0]:
                        a = op.align or 1
                        self._const_bytes = -(-self._const_bytes // a) * a + (op.size_bytes() or 0)
                        if self._const_bytes > limits.CONST_BYTES:
                            raise self.error(f"the module uses too much constant data ({self._const_bytes} bytes of "
                                             f".const, {limits.CONST_BYTES} max)", t)
                for op in new:
                    if isinstance(op, VarOp) and op.var_name in self._module_vars and ".extern" not in op.decl.data[0] \
                            and ".extern" not in self._module_vars[op.var_name]:
                        raise self.error(f"variable {op.var_name!r} is defined twice at module level", t)
                    if isinstance(op, VarOp):
                        self._module_vars[op.var_name] = op.decl.data[0]
                self._module_names.update(_declared_names(new))
            elif not d.startswith("."):
                raise self.error(
                    f"expected a directive, found {d!r} (instructions and labels belong inside a "
                    "'.entry' or '.func' body)"
                )
            elif d in _BODY_ONLY:
                raise self.error(f"directive {d!r} is only allowed inside a function body")
            elif d in PERF_DIRECTIVES:
                raise self.error(f"directive {d!r} is only allowed after a function signature")
            else:
                raise self.error(f"unknown directive {d!r}")
        return ModuleOp(ops)

    def _target_name(self) -> str:
        t = self.peek()
        if t[0] != NAME or not _TARGET_RE.fullmatch(t[1]):
            raise self.error(
                f"expected a target such as sm_90 (sm_NN, compute_NN, debug, map_f64_to_f32, "
                f"texmode_unified, texmode_independent), found {self._describe(t)}"
            )
        return self.advance()[1]

    def _raw(self, directive: str, toks: list[Tok]) -> Operation:
        return new_op(RawDirectiveOp, {"directive": string_attr(directive), "text": StringAttr(_join(toks))})

    def _section(self) -> Operation:
        self.advance()
        name = self.peek()
        if name[0] != NAME or not name[1].startswith("."):
            raise self.error(f"expected a section name such as .debug_info, found {self._describe(name)}")
        self.advance()
        open_tok = self.expect("{", "'{' after the section name")
        self._sync()
        depth = 1
        close = -1
        for m in _SECTION_SCAN.finditer(self.text, open_tok[2] + 1):
            c = m.group()
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    close = m.start()
                    break
        if close < 0:
            raise self.error("unterminated '.section': no matching '}' before end of file", open_tok)
        self.pos = close + 1
        self.prev_end = close + 1
        body = self.text[open_tok[2] + 1 : close]
        lines = [ln.strip() for ln in body.splitlines()]
        text = "\n".join(ln for ln in lines if ln and not ln.startswith("//"))
        return new_op(
            RawDirectiveOp,
            {"directive": string_attr(".section"), "text": StringAttr(f"{name[1]}\n{{\n{text}\n}}")},
        )

    def _declaration(self, module_level: bool) -> list[Operation]:
        linkage: list[str] = []
        while self.peek()[1] in LINKAGE and self.peek()[0] == NAME:
            linkage.append(self.advance()[1])
        t = self.peek()
        if t[1] in (".entry", ".func"):
            if not module_level:
                raise self.error(f"{t[1]!r} is not allowed inside a function body (is a '}}' missing before it?)")
            return [self._function(tuple(linkage))]
        if t[1] in VAR_SPACES:
            return self._variables(tuple(linkage))
        raise self.error(f"expected '.entry', '.func' or a state space after {linkage[-1]!r}, found {self._describe(t)}")

    # -- variables and parameters -------------------------------------------

    def _variables(self, linkage: tuple[str, ...]) -> list[Operation]:
        space = self.advance()[1]
        quals: list[tuple] = []
        ptx_type = None
        while True:
            t = self.peek()
            if t[0] != NAME or not t[1].startswith("."):
                break
            self.advance()
            if t[1] == ".align":
                at = self.peek()
                n = self._int("an alignment after '.align'")
                if n <= 0 or n & (n - 1):
                    raise self.error(f"alignment must be a power of two, not {n}", at)
                quals.append((".align", n))
            elif t[1] in VECTORS:
                quals.append((t[1],))
            elif t[1] == ".attribute":
                self.expect("(", "'(' after '.attribute'")
                inner = self._until(")")
                self.expect(")")
                quals.append((f".attribute({_join(inner)})",))
            elif t[1] in isa.ALL_TYPES or t[1] in OPAQUE_TYPES:
                if ptx_type is not None:
                    raise self.error(f"second type {t[1]!r} in a variable declaration (already {ptx_type!r})", t)
                ptx_type = t[1]
            elif t[1] in (".ptr", ".global", ".shared", ".const", ".local"):
                quals.append((t[1],))
            else:
                raise self.error(f"unexpected {t[1]!r} in a {space} variable declaration", t)
        if ptx_type is None:
            raise self.error(f"expected a type such as .b32 in the {space} variable declaration, found {self._describe(self.peek())}")
        ops: list[Operation] = []
        while True:
            name_tok = self.expect_name("a variable name")
            name = name_tok[1]
            dims: list[int] = []
            count = 0
            if self.accept("<"):
                count = self._count("a variable count")
                self.expect(">", "'>' closing the variable count")
            while self.accept("["):
                if self.accept("]"):
                    dims.append(-1)
                    continue
                dims.append(self._int("an array size"))
                self.expect("]", "']' closing the array size")
            init = None
            if self.accept("="):
                if self.peek()[1] in (",", ";"):
                    raise self.error(f"expected an initializer after '=', found {self._describe(self.peek())}")
                toks = self._until(",", ";")
                self._check_initializer(toks)
                init = _join(toks)
            names = [f"{name}{i}" for i in range(count)] if count else [name]
            for n in names:
                ops.append(
                    new_op(
                        VarOp,
                        {"decl": VarDeclAttr.fast((linkage, space, tuple(quals), ptx_type, n, tuple(dims), init))},
                    )
                )
            if self.accept(","):
                continue
            if not self.at(";"):
                raise self.error_at(
                    self.prev_end,
                    f"expected ';' after the declaration of {name!r}, found {self._describe(self.peek())}",
                )
            self.advance()
            return ops

    def _count(self, what: str, minimum: int = 1) -> int:
        t = self.peek()
        self._closing_angle = True  # '>' closes the count, it is no operator here
        try:
            n = self._int(what)
        finally:
            self._closing_angle = False
        if n < minimum:
            raise self.error(f"{what} must be {'positive' if minimum else 'at least 0'}, found {n}", t)
        return n

    def _param_list(self, owner: str) -> tuple:
        self.expect("(", f"'(' to open the parameter list of {owner!r}")
        params: list[tuple] = []
        if self.accept(")"):
            return ()
        while True:
            at = self.peek()
            p = self._param()
            if any(q[1] == p[1] for q in params):
                raise self.error(f"parameter {p[1]!r} of {owner!r} is declared twice", at)
            params.append(p)
            if self.accept(")"):
                return tuple(params)
            t = self.peek()
            if not self.at(","):
                raise self.error(f"expected ',' or ')' after a parameter of {owner!r}, found {self._describe(t)}")
            self.advance()

    def _param(self) -> tuple:
        space = self.peek()
        if space[1] not in (".param", ".reg") or space[0] != NAME:
            raise self.error(f"expected '.param' or '.reg' to begin a parameter, found {self._describe(space)}")
        decl = [self.advance()]
        ptx_type = ""
        align = None
        while True:
            t = self.peek()
            if t[0] != NAME or not t[1].startswith("."):
                break
            decl.append(self.advance())
            q = t[1]
            if q == ".align":
                n = self.peek()
                align = self._int("an alignment after '.align'")
                if align <= 0 or align & (align - 1):
                    raise self.error(f"alignment must be a power of two, not {align}", n)
                decl.append(n)
            elif q in isa.ALL_TYPES or q in OPAQUE_TYPES:
                if ptx_type:
                    raise self.error(f"second type {q!r} in a parameter (already {ptx_type!r})", t)
                ptx_type = q
            elif q in (".ptr", ".global", ".shared", ".const", ".local") or q in VECTORS:
                pass
            else:
                raise self.error(f"unexpected {q!r} in a parameter declaration", t)
        if not ptx_type:
            raise self.error(f"expected a type such as .u64 in the parameter declaration, found {self._describe(self.peek())}")
        name = self.expect_name("a parameter name")
        if "." in name[1]:
            raise self.error(f"{name[1]!r} is not a parameter name (a PTX name has no '.')", name)
        decl.append(name)
        dims: list[int] = []
        while self.at("["):
            decl.append(self.advance())
            if self.at("]"):
                dims.append(-1)
            else:
                n = self.peek()
                dims.append(self._int("an array size"))
                decl.append(n)
            decl.append(self.expect("]", "']' closing the array size"))
        return (_join(decl), name[1], space[1], ptx_type, align, tuple(dims))

    # -- functions -----------------------------------------------------------

    def _function(self, linkage: tuple[str, ...]) -> Operation:
        kind = self.advance()[1]
        ret_params = None
        if kind == ".func" and self.at("("):
            ret_params = self._param_list("the return value")
        name = self.expect_name(f"a function name after {kind!r}")
        if "." in name[1]:
            raise self.error(f"{name[1]!r} is not a function name (a PTX name has no '.')", name)
        params: tuple = ()
        if self.at("("):
            params = self._param_list(name[1])
        directives: list[tuple[str, str]] = []
        where: dict[str, tuple[str, int, int]] = {}
        while True:
            t = self.peek()
            if t[0] == NAME and t[1] in PERF_DIRECTIVES:
                self.advance()
                where[t[1]] = (self.src.filename, *self.src.location(t[2]))
                vals: list[Tok] = []
                while self.peek()[0] == NUM or self.at(","):
                    vals.append(self.advance())
                directives.append((t[1], _join(vals)))
            elif t[1] == ".pragma" and t[0] == NAME:
                self.advance()
                toks = self._until(";")
                self._check_pragma(toks, t)
                self.expect(";")
                directives.append((".pragma", _join(toks)))
            else:
                break
        given = [d for d, _v in directives]
        if ".maxntid" in given and ".reqntid" in given:
            raise self.error("conflicting directives: .maxntid and .reqntid cannot both be specified", name)
        if kind == ".entry":
            why = limits.param_error(name[1], params, self._version)
            if why is not None:
                raise self.error(why, name)
        props = {
            "symbol": StringAttr(name[1]),
            "kind": string_attr(kind),
            "linkage": WordsAttr.fast(linkage),
            "params": ParamsAttr.fast(params),
            "directives": DirectivesAttr.fast(tuple(directives)),
        }
        if ret_params is not None:
            props["ret_params"] = ParamsAttr.fast(ret_params)
        self._arity[name[1]] = (len(ret_params or ()), len(params))
        if self.accept(";"):
            return _located(new_func(props, Region()), where)
        if not self.at("{"):
            t = self.peek()
            what = "a performance directive, '{' or ';'" if t[0] == NAME and t[1].startswith(".") else "'{' or ';'"
            raise self.error(f"expected {what} after the signature of {name[1]!r}, found {self._describe(t)}")
        prev = self._defined_funcs.get(name[1])
        if prev is not None:
            line = self.src.location(prev[2])[0]
            raise self.error(f"function {name[1]!r} is defined twice (first definition at line {line})", name)
        self._defined_funcs[name[1]] = name
        self._module_names.add(name[1])  # a function may call itself or take its own address
        reg_params = [p for p in (*(ret_params or ()), *params) if p[2] == ".reg"]
        region = self._body(name, reg_params, [p[1] for p in (*(ret_params or ()), *params)])
        return _located(new_func(props, region), where)

    # -- bodies --------------------------------------------------------------

    def _body(self, fname: Tok, reg_params: Sequence[tuple] = (), param_names: Sequence[str] = ()) -> Region:
        open_tok = self.expect("{")
        param_set = set(param_names)
        local_names: set[str] = set(param_names)  # parameters and the body's variables (duplicates)
        scope_names: list[set[str]] = [set()]  # variables declared in each open { } scope
        other_labels: set[str] = set()  # labels of .callprototype / .calltargets
        self.scopes = _Scopes()
        self.scopes.push()
        self._operand_cache = {}
        self._node_types: dict[tuple, str] = {}  # declared type of each pre-filled register node
        for text, pname, _space, ptx_type, _align, _dims in reg_params:
            # a .reg parameter is a register of the body (scope 0)
            rtype = isa.vector_reg_type(text.split(), ptx_type)
            self.scopes.declare(pname, 0, rtype)
            self._declared([(pname, 0)], rtype, 0)
        self._layers = []
        self._shadow = []
        self._shadow_marks = []
        depth = 1
        blocks: list[list[Operation]] = [[]]
        labels: dict[str, int] = {}
        label_tok: dict[str, Tok] = {}
        open_block = True
        # (op, offset of the statement, block index) of terminators whose
        # successors wait for labels
        branches: list[tuple[Operation, int, int]] = []
        tables: dict[str, tuple[str, ...]] = {}
        ops = blocks[0]
        text = self.text
        fast = self.fast
        scope_opens: list[Tok] = []
        fast_match = _fast_match
        opcodes = self._opcodes
        new_obj = object.__new__
        set_attr = object.__setattr__
        unknown_loc = UNKNOWN_LOC

        while True:
            # statement boundary: drop the token buffer (un-reading lookahead)
            if self.toks:
                if self.i < len(self.toks):
                    self.pos = self.toks[self.i][2]
                self.toks = []
                self.i = 0
            if fast:
                # the fast path: one match per statement while statements are
                # plain one-liners; anything else falls through to the token
                # parser for one statement
                pos = self.pos
                cache = self._operand_cache
                while True:
                    m = fast_match(text, pos)
                    if m is None:
                        break
                    g = m.lastgroup
                    if g == "ins":
                        opc, a, gname = m.group("op", "args", "g")
                        entry = opcodes.get(opc)
                        if entry is None:
                            entry = self._opcode_entry(opc)
                            if entry is None:
                                break
                        if a:
                            args = self._fast_args(a, m, cache)
                            if args is None:
                                break
                        else:
                            args = ()
                        cls, mods, lo, hi, term, typed, vdata, addressed = entry
                        if not lo <= len(args) <= hi:
                            break
                        if vdata and any(k < len(args) and args[k][0] == "reg" for k in vdata):
                            break
                        if addressed is not None:
                            for node in args:
                                if node[0] == "addr" and node[1][0] == "reg" and not _FITS.get(
                                        (self._node_types.get(node[1]), addressed)):
                                    self._check_types(cls.ISA, mods.data, args, m.start("ins"))
                                    break
                        if typed is not None:
                            declared = self._node_types
                            for rule in typed:
                                k = rule[0]
                                if k < len(args):
                                    node = args[k]
                                    if node[0] == "reg" and not _FITS.get((declared.get(node), rule)):
                                        self._check_types(cls.ISA, mods.data, args, m.start("ins"))
                                        break
                        aa = new_obj(ArgsAttr)
                        set_attr(aa, "data", args)
                        props = {"mods": mods, "args": aa}
                        if gname is not None:
                            reg = cache.get("@" + gname)
                            if reg is None:
                                reg = self._fast_guard(gname, m)
                                if reg is None:
                                    break
                            ga = new_obj(GuardAttr)
                            set_attr(ga, "data", (reg, m.group("neg") == "!"))
                            props["guard"] = ga
                        op = cls.__new__(cls)
                        op.properties = props
                        op.attributes = {}
                        op.location = unknown_loc
                        if not open_block:
                            ops = []
                            blocks.append(ops)
                            open_block = True
                        ops.append(op)
                        if term:
                            branches.append((op, m.start("ins"), len(blocks) - 1))
                            open_block = False
                        pos = m.end()
                    elif g == "lbl":
                        name = m.group("lbl")
                        if name in labels:
                            break
                        if open_block:
                            ops.append(None)  # type: ignore[arg-type]  # placeholder for the fall-through
                        ops = []
                        blocks.append(ops)
                        open_block = True
                        labels[name] = len(blocks) - 1
                        label_tok[name] = (NAME, name, m.start("lbl"))
                        ops.append(new_op(LabelOp, {"label": _fast_str(name)}))
                        pos = m.end()
                    else:  # "pdecl" or "loc"
                        op = self._fast_param(m) if g == "pdecl" else self._fast_loc(m)
                        if op is None:
                            break
                        if g == "pdecl":
                            pname = m.group("pname")
                            if pname in scope_names[-1] or (depth == 1 and pname in local_names):
                                raise self.error_at(m.start("pname"), f"{pname!r} is declared twice in the same scope "
                                                                      f"of {fname[1]!r}")
                            scope_names[-1].add(pname)
                            local_names.add(pname)
                        if not open_block:
                            ops = []
                            blocks.append(ops)
                            open_block = True
                        ops.append(op)
                        pos = m.end()
                if pos != self.pos:
                    self.pos = self.prev_end = pos
            # the token parser
            t = self.peek()
            kind, ttext = t[0], t[1]
            if kind == EOF:
                o = scope_opens[-1] if scope_opens else open_tok
                where = "nested scope" if scope_opens else f"body of {fname[1]!r}"
                raise self.error_at(
                    self.prev_end,
                    f"expected '}}' before end of file to close the {where} opened at line {self.src.location(o[2])[0]}",
                )
            if kind == PUNCT and ttext == "}":
                self.advance()
                depth -= 1
                if depth == 0:
                    break
                scope_opens.pop()
                scope_names.pop()
                self.scopes.pop()
                self._operand_cache = self._layers.pop()
                del self._shadow[self._shadow_marks.pop():]
                if not open_block:
                    ops = []
                    blocks.append(ops)
                    open_block = True
                ops.append(new_op(ScopeEndOp, {}))
                continue
            if kind == PUNCT and ttext == "{":
                scope_opens.append(self.advance())
                depth += 1
                scope_names.append(set())
                self.scopes.push()
                self._layers.append(self._operand_cache)
                self._operand_cache = {}
                self._shadow_marks.append(len(self._shadow))
                if not open_block:
                    ops = []
                    blocks.append(ops)
                    open_block = True
                ops.append(new_op(ScopeBeginOp, {}))
                continue
            if kind == NAME and not ttext.startswith(".") and self.peek(1)[1] == ":" and self.peek(1)[0] == PUNCT:
                # a label, or a labelled table directive
                self.advance()
                self.advance()
                nxt = self.peek()
                if nxt[1] in LABEL_DIRECTIVES and nxt[0] == NAME:
                    self.advance()
                    toks = self._until(";")
                    self.expect(";")
                    if not open_block:
                        ops = []
                        blocks.append(ops)
                        open_block = True
                    if nxt[1] == ".branchtargets":
                        names = tuple(x[1] for x in toks if x[0] == NAME)
                        if not names:
                            raise self.error("expected at least one label after '.branchtargets'", nxt)
                        if ttext in tables:
                            raise self.error(f"branch table {ttext!r} is defined twice", t)
                        tables[ttext] = names
                        label_tok.setdefault(ttext, t)
                        ops.append(
                            new_op(BranchTargetsOp, {"label": StringAttr(ttext), "target_labels": LabelsAttr.fast(names)})
                        )
                    else:
                        other_labels.add(ttext)
                        ops.append(self._raw(nxt[1], [t, (PUNCT, ":", t[2])] + toks))
                    continue
                if ttext in labels:
                    line = self.src.location(label_tok[ttext][2])[0]
                    raise self.error(f"label {ttext!r} is defined twice (first definition at line {line})", t)
                if open_block:
                    ops.append(None)  # type: ignore[arg-type]  # placeholder for the fall-through
                ops = []
                blocks.append(ops)
                open_block = True
                labels[ttext] = len(blocks) - 1
                label_tok[ttext] = t
                ops.append(new_op(LabelOp, {"label": _fast_str(ttext)}))
                continue
            if kind == NAME and ttext.startswith("."):
                if not open_block:
                    ops = []
                    blocks.append(ops)
                    open_block = True
                new = self._body_directive()
                ops.extend(new)
                for n in _declared_names(new):
                    here = scope_names[-1]
                    if n in here or (depth == 1 and n in local_names):
                        raise self.error(f"{n!r} is declared twice in the same scope of {fname[1]!r}", t)
                    here.add(n)
                    local_names.add(n)
                continue
            # an instruction
            op, is_term = self._instruction()
            if not open_block:
                ops = []
                blocks.append(ops)
                open_block = True
            ops.append(op)
            if is_term:
                branches.append((op, t[2], len(blocks) - 1))
                open_block = False
        self.scopes.pop()
        module_names = self._module_names
        symbols.check_function((op for ops_ in blocks for op in ops_ if op is not None),
                               lambda n: n in param_set or n in module_names,
                               set(labels) | set(tables) | other_labels,
                               lambda message, near, opcode=None: self._error_near(message, near, open_tok[2], opcode),
                               self._arity.get)
        return self._assemble(blocks, labels, branches, tables, open_block)

    def _check_initializer(self, toks: list[Tok]) -> None:
        """An initializer's values as ptxas reads them: two values need a ',' between them
        (``{..., 04 0, ...}``), and a name is an identifier (no '.': ``mov.u6432``)."""
        prev = None
        for tok in toks:
            value = tok[0] in (NUM, NAME) or (tok[0] == PUNCT and tok[1] in ")}]")
            if tok[0] == NAME and "." in tok[1]:
                raise self.error(f"{tok[1]!r} is not a value of an initializer (a PTX name has no '.')", tok)
            if value and prev is not None and (prev[0] in (NUM, NAME) or prev[1] in ")}]") and tok[1] not in ")}]":
                raise self.error(f"expected ',' between the values of an initializer, found {self._describe(tok)}", tok)
            prev = tok

    def _check_pragma(self, toks: list[Tok], directive: Tok) -> None:
        """``.pragma "a", "b";``: string literals separated by commas, as ptxas reads it."""
        for k, tok in enumerate(toks):
            if (tok[0] != STR) if k % 2 == 0 else (tok[1] != ","):
                what = "a string" if k % 2 == 0 else "',' or ';'"
                raise self.error(f"expected {what} in '.pragma', found {self._describe(tok)}", tok)
        if not toks or len(toks) % 2 == 0:
            raise self.error("expected a string after '.pragma'", toks[-1] if toks else directive)

    def _error_near(self, message: str, near: str, start: int, opcode: str | None = None) -> PTXSyntaxError:
        """An error at the first mention of ``near`` as an operand in the body starting at
        ``start`` (the statements of the fast path keep no location): after ``[ , { ( | !`` or
        after a statement's opcode; with ``opcode``, in the first statement of that opcode
        (at the opcode itself where ``near`` is not found there)."""
        text, end = self.text, self.pos
        if opcode:
            first = None
            for m in re.compile(r"^[ \t]*(?:@!?[%\w$]+[ \t]+)?(" + re.escape(opcode) + r")(?![\w.])",
                                re.M).finditer(text, start, end):
                first = m.start(1) if first is None else first
                stop = text.find(";", m.end())
                k = text.find(near, m.end(), stop if stop >= 0 else end) if near else -1
                if k >= 0:
                    return self.error_at(k, message)  # the first statement of the opcode that has it
            return self.error_at(start if first is None else first, message)
        if near:
            tail = r"(?![\w$])" if near[-1:].isalnum() or near[-1:] in "_$" else ""
            pat = re.compile(r"(?:[\[,{(|!+]|^[ \t]*(?:@!?[%\w$]+[ \t]+)?[\w.:]+[ \t])\s*(" + re.escape(near) + ")" + tail,
                             re.M)
            m = pat.search(text, start, end)
            if m is not None:
                return self.error_at(m.start(1), message)
        return self.error_at(start, message)

    def _opcode_entry(self, opc: str) -> tuple | None:
        """Fast-path facts about an opcode token (None: let the token parser
        report it)."""
        try:
            instr, _ = isa.resolve_opcode(opc)
        except (isa.UnknownOpcode, isa.UnknownModifier):
            return None
        if instr.video or instr.name in ("bar", "barrier"):
            return None  # video operands and modifiers, barrier ids and counts: the token parser checks them
        lo, hi = instr.arity if instr.arity is not None else (0, 1 << 30)
        mods = modifiers_attr(opc[len(instr.name):])
        typed = isa.operand_type_rules(instr, mods.data)
        # a .v2/.v4 load, store or mov: a plain register as its data goes to the token
        # parser, which checks it is a vector register of that width
        vdata = isa.vector_data_positions(instr, mods.data)
        addressed = None if isa.state_space(instr, mods.data) is None else ("address", opc, self._address_size)
        entry = self._opcodes[opc] = (INSTRUCTION_OPS[instr.name], mods, lo, hi, instr.terminator, typed, vdata,
                                      addressed)
        return entry

    def _check_types(self, instr: isa.Instr, mods: tuple[str, ...], args: tuple, offset: int) -> None:
        """Register operands must fit the instruction type, as ``ptxas`` checks
        (``isa.operand_type_error``; the verifier checks IR from elsewhere)."""
        lookup = self.scopes.lookup
        why = isa.operand_type_error(instr, mods, args, lambda node: (lookup(node[1]) or (0, None))[1],
                                     self._address_size)
        if why is not None:
            raise self.error_at(offset, f"'{instr.name}{''.join(mods)}': {why}")
        if isa.state_space(instr, mods) is not None:
            opc = instr.name + "".join(mods)
            for node in args:
                if node[0] == "addr" and node[1][0] == "reg":
                    d = lookup(node[1][1])
                    if d is not None:
                        _FITS[(d[1], ("address", opc, self._address_size))] = True
        for rule in isa.operand_type_rules(instr, mods) or ():  # remember what fits (the fast path's test)
            k = rule[0]
            if k < len(args) and args[k][0] == "reg":
                d = lookup(args[k][1])
                if d is not None and d[1] not in isa.VECTOR_REG_TYPES and isa.fits(d[1], rule[2], rule[1]):
                    _FITS[(d[1], rule)] = True

    def _fast_args(self, a: str, m: re.Match[str], cache: dict[str, tuple]) -> tuple | None:
        """Operand nodes of the operand text ``a`` of the statement ``m``."""
        a = a.rstrip()
        if "{" in a or "(" in a:
            parts = _split_operands(a)
            if parts is None:
                return None
        else:
            parts = a.split(",")
        get = cache.get
        args = [get(p.strip()) for p in parts]
        if all(args):
            return tuple(args)
        for k, node in enumerate(args):
            if node is not None:
                continue
            p = parts[k]
            key = p.strip()
            if self._layers:
                node = self._outer_get(key)
            if node is None:
                node = self._classify(key)
                if node is None:
                    off = m.start("args") + sum(len(q) + 1 for q in parts[:k])
                    node = self._sub_operand(off, off + len(p))
                    if node is None or node[0] in ("elem", "radd", "vsel", "neg") or (
                        node[0] == "reg" and (self.scopes.lookup(node[1]) or (0, ""))[1] in isa.VECTOR_REG_TYPES
                    ):
                        return None  # the token parser reads (and checks) the statement
            cache[key] = args[k] = node
        return tuple(args)

    def _fast_guard(self, gname: str, m: re.Match[str]) -> tuple | None:
        key = "@" + gname
        reg = self._outer_get(key) if self._layers else None
        if reg is None:
            try:
                reg = self._guard_register((NAME, gname, m.start("g")))
            except PTXError:
                return None
        self._operand_cache[key] = reg
        return reg

    def _outer_get(self, key: str) -> tuple | None:
        """A cached node from an enclosing scope's layer, unless ``key``
        mentions a name a nested scope declared (it may be shadowed)."""
        for n in self._shadow:
            if n in key:
                return None
        for layer in reversed(self._layers):
            node = layer.get(key)
            if node is not None:
                return node
        return None

    def _declared(self, names: list[tuple[str, int]], ptx_type: str, scope: int) -> None:
        """Keep the operand cache right after a register declaration, and
        pre-fill it with the declared registers (most operands are plain
        registers, so most lookups then hit)."""
        cache = self._operand_cache
        stems = [n for n, _ in names]
        if self._layers:
            self._shadow.extend(stems)
            stale = True
        else:
            # at function level a declaration can only change what a cached
            # text means if that text used the name as a symbol before
            stale = any(not n.startswith("%") for n in stems)
        if stale and cache:
            for k in [k for k in cache if any(n in k for n in stems)]:
                del cache[k]
        pred = ptx_type == ".pred"
        node_types = self._node_types
        if ptx_type in isa.VECTOR_REG_TYPES:
            return  # the fast path leaves vector registers to the token parser
        for name, count in names:
            if count > 65536:
                continue  # resolved on demand instead
            for n in [f"{name}{i}" for i in range(count)] if count else [name]:
                node = ("reg", n, scope)
                cache[n] = node
                node_types[node] = ptx_type
                if pred:
                    cache["@" + n] = node

    def _name_node(self, name: str) -> tuple | None:
        """What ``_primary`` makes of a lone name (None: an error there)."""
        node = self._operand_cache.get(name)
        if node is not None:
            return node
        if name == "_":
            return ("sink",)
        found = self.scopes.lookup(name)
        if found is not None:
            # vector registers: the token parser reads and checks them
            return None if found[1] in isa.VECTOR_REG_TYPES else ("reg", name, found[0])
        if name in isa.SPECIAL_REGISTERS:
            return ("sreg", name)
        if name.startswith("%") or "." in name:
            return None  # undeclared, or a vector register's element ``v.x``
        return ("sym", name, 0)

    def _classify(self, p: str) -> tuple | None:
        """The operand node of text ``p`` for the common shapes, as the token
        parser would build it; None when ``p`` needs the token parser."""
        c = p[:1]
        try:
            if c == "[":  # the commonest miss: an address
                m = _address_match(p)
                if m is not None:
                    base = self._name_node(m.group(1))
                    if base is None or base[0] not in ("reg", "sym"):
                        return None
                    plus, neg, minus = m.group(3, 2, 4)
                    if plus is not None:
                        off = parse_int_immediate(plus)
                        return ("addr", base, -off if neg else off, "")
                    if minus is not None:
                        return ("addr", base, -parse_int_immediate(minus), "")
                    return ("addr", base, 0, "")
            elif c in _NUM_START:  # the next commonest: an immediate
                m = _number_match(p)
                if m is not None:
                    return ("imm", p)
        except ValueError:
            return None
        m = _operand_match(p)
        if m is None:
            return None
        g = m.lastgroup
        try:
            if m.group("n") is not None:
                node = self._name_node(m.group("n"))
                if node is None:
                    return None
                n2 = m.group("n2")
                if n2 is not None:
                    node2 = self._name_node(n2)
                    if node2 is None:
                        return None
                    return ("pair", node, node2)
                if m.group("soff") is not None or m.group("smin") is not None:
                    if node[0] != "sym":
                        return None
                    if m.group("soff") is not None:
                        off = parse_int_immediate(m.group("soff"))
                        off = -off if m.group("sneg") else off
                    else:
                        off = -parse_int_immediate(m.group("smin"))
                    return ("sym", node[1], off)
                return node
            if m.group("num") is not None:
                return ("imm", m.group("ineg") + m.group("num"))
            if m.group("nn") is not None:
                node = self._name_node(m.group("nn"))
                return None if node is None else ("not", node)
            if m.group("an") is not None:
                base = self._name_node(m.group("an"))
                if base is None or base[0] not in ("reg", "sym"):
                    return None
                off = 0
                if m.group("aoff") is not None:
                    off = parse_int_immediate(m.group("aoff"))
                    off = -off if m.group("aneg") else off
                elif m.group("amin") is not None:
                    off = -parse_int_immediate(m.group("amin"))
                return ("addr", base, off, "")
            if g == "vec" or g == "paren":
                inner = m.group(g)
                if g == "paren" and not inner.strip():
                    return ("paren", ())
                items = []
                for q in inner.split(","):
                    node = self._classify(q)
                    if node is None or node[0] not in ("reg", "sreg", "imm", "sym", "sink"):
                        return None
                    items.append(node)
                return (g, tuple(items))
        except ValueError:
            return None
        return None

    def _sub_operand(self, start: int, end: int) -> tuple | None:
        """Parse the one operand in ``text[start:end]`` with the token parser;
        None if that is not exactly one well-formed operand."""
        saved = self.toks, self.i, self.pos, self.prev_end
        self.toks, self.i, self.pos = [], 0, start
        try:
            node = self._operand()
            ok = self.prev_end <= end and self.peek()[2] >= end
        except PTXError:
            return None
        finally:
            self.toks, self.i, self.pos, self.prev_end = saved
        return node if ok else None

    def _fast_param(self, m: re.Match[str]) -> Operation | None:
        """``.param [.align N] .type name[[N]];`` in a body (call sequences)."""
        ptx_type = m.group("ptype")
        if ptx_type not in isa.ALL_TYPES and ptx_type not in OPAQUE_TYPES:
            return None
        align, dim = m.group("palign", "pdim")
        quals = ((".align", parse_int_immediate(align)),) if align is not None else ()
        dims = (parse_int_immediate(dim),) if dim is not None else ()
        if dim is not None and (dims[0] == 0 and dim != "0"):
            return None
        return new_op(VarOp, {"decl": VarDeclAttr.fast(((), ".param", quals, ptx_type, m.group("pname"), dims, None))})

    def _fast_loc(self, m: re.Match[str]) -> Operation | None:
        raw = m.group("loc")
        end = m.end()
        text = self.text
        if end < len(text) and text[end] != "\n" and not text.startswith("//", end):
            return None
        attr = self._loc_cache.get(raw)
        if attr is None:
            mm = _LOC3_RE.fullmatch(raw)
            if mm is not None:
                norm = " ".join(mm.groups())
            else:
                mm = _LOC_INLINED_RE.fullmatch(raw)
                if mm is None:
                    return None
                a, b, c, fn, x, y, z = mm.groups()
                norm = f"{a} {b} {c}, function_name {fn}, inlined_at {x} {y} {z}"
            attr = self._loc_cache[raw] = _fast_str(norm)
        return new_op(RawDirectiveOp, {"directive": string_attr(".loc"), "text": attr})

    def _assemble(
        self,
        blocks: list[list[Operation]],
        labels: dict[str, int],
        branches: list[tuple[Operation, int, int]],
        tables: dict[str, tuple[str, ...]],
        last_open: bool,
    ) -> Region:
        if last_open:
            blocks[-1].append(new_op(ImplicitReturnOp, {}))
        need_tail = any(
            op.properties.get("guard") is not None and bi == len(blocks) - 1 for op, _, bi in branches
        )
        if need_tail:
            blocks.append([new_op(ImplicitReturnOp, {})])
        xblocks = [Block() for _ in blocks]
        for label, bi in labels.items():
            # xDSL drops a trailing "_<digits>" from name hints; keep it visible
            hint = _block_hint(label)
            if _VALID_NAME(hint):
                xblocks[bi]._name = hint  # what the name_hint setter stores, without its checks
        for bi, ops in enumerate(blocks):
            if ops and ops[-1] is None:
                ft = new_op(FallthroughOp, {})
                _set_successors(ft, (xblocks[bi + 1],))
                ops[-1] = ft
            assert ops and type(ops[-1]) in _TERMINATORS, "every block ends in a terminator"
        for op, off, bi in branches:
            succs: list[Block] = []
            name = op.name
            if name == "ptx.bra":
                target = op.properties["args"].data[0]  # type: ignore[union-attr]
                if target[0] != "sym":
                    raise self.error_at(off, "'bra' expects a label as its operand")
                if target[1] not in labels:
                    if target[1] in tables:
                        raise self.error_at(off, f"'bra' to branch table {target[1]!r}: use 'brx.idx' to branch through a table")
                    raise self.error_at(off, f"branch to undefined label {target[1]!r}")
                succs.append(xblocks[labels[target[1]]])
            elif name == "ptx.brx.idx":
                table = op.properties["args"].data[1]  # type: ignore[union-attr]
                if table[0] != "sym" or table[1] not in tables:
                    what = repr(table[1]) if table[0] == "sym" else "its second operand"
                    raise self.error_at(
                        off, f"'brx.idx' needs a '.branchtargets' table as its second operand; {what} is not one"
                    )
                for lbl in tables[table[1]]:
                    if lbl not in labels:
                        raise self.error_at(off, f"branch table {table[1]!r} names undefined label {lbl!r}")
                    succs.append(xblocks[labels[lbl]])
            if op.properties.get("guard") is not None:
                succs.append(xblocks[bi + 1])
            if succs:
                _set_successors(op, succs)
        for xb, ops in zip(xblocks, blocks):
            _link_ops(xb, ops)
        return Region(xblocks)

    def _body_directive(self) -> list[Operation]:
        t = self.peek()
        d = t[1]
        if d == ".reg":
            return [self._reg_decl()]
        if d in VAR_SPACES or d in LINKAGE:
            return self._declaration(module_level=False)
        if d in (".loc", ".file"):
            self.advance()
            return [self._raw(d, self._rest_of_line(t))]
        if d == ".target":  # ptxas accepts a .target repeated inside a body (and ignores it)
            self.advance()
            rest = self._rest_of_line(t)
            for tok in rest:
                if tok[1] != "," and not (tok[0] == NAME and _TARGET_RE.fullmatch(tok[1])):
                    raise self.error(f"expected a target such as sm_90 after '.target', found {self._describe(tok)}", tok)
            return [self._raw(d, rest)]
        if d == ".pragma":
            self.advance()
            toks = self._until(";")
            self._check_pragma(toks, t)
            self.expect(";")
            return [self._raw(d, toks)]
        if d in (".entry", ".func"):
            raise self.error(f"{d!r} is not allowed inside a function body (is a '}}' missing before it?)")
        if d in LABEL_DIRECTIVES:
            raise self.error(f"{d!r} needs a label: 'name: {d} ...;'")
        if d in _MODULE_ONLY or d in PERF_DIRECTIVES:
            raise self.error(f"directive {d!r} is not allowed inside a function body")
        raise self.error(f"unknown directive {d!r}")

    def _reg_decl(self) -> Operation:
        self.advance()
        quals: list[str] = []
        ptx_type = None
        while self.peek()[0] == NAME and self.peek()[1].startswith("."):
            q = self.advance()
            if q[1] in isa.ALL_TYPES:
                if ptx_type is not None:
                    raise self.error(f"second type {q[1]!r} in a register declaration (already {ptx_type!r})", q)
                ptx_type = q[1]
            elif q[1] in VECTORS:
                quals.append(q[1])
            else:
                raise self.error(f"unexpected {q[1]!r} in a register declaration (expected a type such as .b32)", q)
        if ptx_type is None:
            raise self.error(f"expected a register type such as .b32 or .pred, found {self._describe(self.peek())}")
        rtype = ptx_type
        if quals:
            rtype = isa.vector_reg_type(quals, ptx_type)
            if len(quals) > 1 or rtype not in isa.VECTOR_REG_TYPES:
                why = ("a predicate register cannot be a vector" if ptx_type == ".pred"
                       else "a vector register has 2 or 4 elements and at most 128 bits")
                raise self.error(f"'.reg {' '.join(quals)} {ptx_type}': {why}")
        names: list[tuple[str, int]] = []
        while True:
            n = self.expect_name("a register name")
            count = 0
            if self.accept("<"):
                # ptxas accepts %r<0> (no registers); -1 keeps it apart from a scalar (0)
                count = self._count("a register count", minimum=0) or -1
                self.expect(">", "'>' closing the register count")
            if self.scopes.declared_here(n[1], count):
                raise self.error(f"register {n[1]!r} is declared twice in the same scope", n)
            names.append((n[1], count))
            self.scopes.declare(n[1], count, rtype)
            if not self.accept(","):
                break
        if not self.at(";"):
            raise self.error_at(
                self.prev_end, f"expected ';' after the register declaration, found {self._describe(self.peek())}"
            )
        self.advance()
        self._declared(names, rtype, self.scopes.current)
        props = {
            "ptx_type": string_attr(ptx_type),
            "names": RegNamesAttr.fast(tuple(names)),
            "scope": IntAttr(self.scopes.current),
        }
        if quals:
            props["qualifiers"] = WordsAttr.fast(tuple(quals))
        return new_op(RegDeclOp, props)

    # -- instructions --------------------------------------------------------

    def _instruction(self) -> tuple[Operation, bool]:
        guard = None
        if self.at("@"):
            self.advance()
            neg = self.accept("!")
            g = self.peek()
            if g[0] != NAME or g[1].startswith("."):
                raise self.error(f"expected a predicate register after '@', found {self._describe(g)}")
            self.advance()
            guard = (self._guard_register(g), neg)
        t = self.peek()
        if t[0] != NAME or t[1].startswith("."):
            raise self.error(f"expected an instruction, found {self._describe(t)}")
        self.advance()
        while self.peek()[0] == NAME and self.peek()[1].startswith("."):
            # ``mov .u32``: ptxas reads modifiers after white space (no operand starts with '.')
            t = (NAME, t[1] + self.advance()[1], t[2])
        try:
            instr, mods = isa.resolve_opcode(t[1])
        except isa.UnknownOpcode as e:
            raise self.error(f"unknown opcode {e.args[0]!r}", t) from None
        except isa.UnknownModifier as e:
            mm = re.compile(re.escape(e.modifier) + r"(?=\.|::|$)").search(t[1], len(e.instr.name))
            off = t[2] + (mm.start() if mm else 0)
            raise self.error_at(off, f"unknown modifier {e.modifier!r} for '{e.instr.name}'") from None
        args: list[tuple] = []
        nxt = self.peek()
        if nxt[1] != ";" and (
            nxt[0] == EOF or (instr.arity is not None and instr.arity[1] == 0)
            or (nxt[0] == PUNCT and nxt[1] == "}") or (nxt[0] == NAME and nxt[1].startswith("."))
        ):
            # no operand can start here: the ';' is missing
            raise self.error_at(self.prev_end, f"expected ';' after the '{t[1]}' instruction, found {self._describe(nxt)}")
        arg_toks: list[Tok] = []
        if not self.at(";"):
            while True:
                arg_toks.append(self.peek())
                args.append(self._operand())
                if not self.at(","):
                    break
                self.advance()
        if not self.at(";"):
            nxt = self.peek()
            if nxt[0] != EOF and self._same_line(self.toks[self.i - 1], nxt) and args:
                raise self.error(
                    f"expected ',' or ';' after operand {len(args)} of '{t[1]}', found {self._describe(nxt)}"
                )
            raise self.error_at(self.prev_end, f"expected ';' after the '{t[1]}' instruction, found {self._describe(nxt)}")
        self.advance()
        if instr.arity is not None:
            lo, hi = instr.arity
            if not lo <= len(args) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise self.error(f"'{instr.name}' expects {want} operands, found {len(args)}", t)
        self._check_types(instr, mods, tuple(args), t[2])
        bad = limits.barrier_error(instr, mods, tuple(args))
        if bad is not None:
            raise self.error(bad[1], arg_toks[bad[0]])
        props = {"mods": modifiers_attr(t[1][len(instr.name):]), "args": ArgsAttr.fast(tuple(args))}
        if guard is not None:
            props["guard"] = GuardAttr.fast(guard)
        op = new_op(INSTRUCTION_OPS[instr.name], props)
        if instr.name in _LOCATED_OPCODES:
            line, col = self.src.location(t[2])
            op.location = FileLineColLoc(StringAttr(self.src.filename), IntAttr(line), IntAttr(col))
        return op, instr.terminator

    def _guard_register(self, tok: Tok) -> tuple:
        name = tok[1]
        found = self.scopes.lookup(name)
        if found is not None:
            if found[1] and found[1] != ".pred":
                raise self.error(f"guard {name!r} must be a .pred register, but it is declared {found[1]}", tok)
            return ("reg", name, found[0])
        if name.startswith("%"):
            raise self.error(f"use of undeclared register {name!r} as a guard", tok)
        raise self.error(f"expected a predicate register after '@', found {name!r}", tok)

    def _operand(self) -> tuple:
        node = self._primary()
        if self.at("|"):
            self.advance()
            return ("pair", node, self._primary())
        return node

    def _primary(self) -> tuple:
        t = self.peek()
        kind, text = t[0], t[1]
        if (kind == NUM or kind == PUNCT) and self._starts_expression():
            mark = self.i
            try:
                return ("imm", str(self._const_expr("an operand")))
            except PTXSyntaxError:
                if text != "(":
                    raise
                self.i = mark  # a parenthesised operand list, not an expression
        if kind == PUNCT:
            if text == "!":
                self.advance()
                return ("not", self._primary())
            if text == "{":
                self.advance()
                return ("vec", tuple(self._items("}", t)))
            if text == "(":
                self.advance()
                return ("paren", () if self.accept(")") else tuple(self._items(")", t)))
            if text == "[":
                return self._address()
            if text == "-":
                self.advance()
                n = self.peek()
                if n[0] == NAME and not n[1].startswith(".") and not self._nested:
                    return ("neg", self._primary())  # vmad's -%r1 (isa.video_operand_error checks it)
                if n[0] != NUM:
                    raise self.error(f"expected a number after '-', found {self._describe(n)}")
                self.advance()
                return ("imm", "-" + n[1])
        elif kind == NUM:
            self.advance()
            return ("imm", text)
        elif kind == NAME and not text.startswith("."):
            self.advance()
            if text == "_":
                return ("sink",)
            found = self.scopes.lookup(text) if self.scopes.stack else None
            if found is not None:
                return self._register_plus(("reg", text, found[0]))
            if text in isa.SPECIAL_REGISTERS:
                return ("sreg", text)
            base, dot, field = text.rpartition(".")
            if dot and "." + field in isa.ELEMENT_FIELDS and "." not in base and self.scopes.stack:
                vfound = self.scopes.lookup(base)
                if vfound is not None:
                    return ("elem", ("reg", base, vfound[0]), "." + field)
            if dot and isa.VIDEO_SELECTOR_SYNTAX.fullmatch(field) and "." not in base and self.scopes.stack:
                vfound = self.scopes.lookup(base)
                if vfound is not None:  # a video selector, %r1.b0 (isa.video_operand_error checks it)
                    return ("vsel", ("reg", base, vfound[0]), "." + field)
            if text.startswith("%"):
                raise self.error(f"use of undeclared register {text!r}", t)
            off = 0
            if self.at("+") or (self.at("-") and self.peek(1)[0] == NUM):
                sign = -1 if self.advance()[1] == "-" else 1
                off = sign * self._int("an offset")
            return ("sym", text, off)
        elif kind == NAME:
            raise self.error(f"expected an operand, found {text!r} (a directive or type name)")
        raise self.error(f"expected an operand, found {self._describe(t)}")

    def _register_plus(self, node: tuple) -> tuple:
        """``%rd1 + 8`` (a source operand of its own, not inside ``[ ]``, ``{ }`` or ``( )``)."""
        if self._nested or not (self.at("+") or self.at("-")):
            return node
        nxt = self.peek(1)
        if not (nxt[0] == NUM or (nxt[0] == PUNCT and nxt[1] in ("-", "(", "~"))):
            return node
        if self.at("-"):
            raise self.error(
                f"'{node[1]} - ...': PTX has no register minus an immediate; write '{node[1]} + -{nxt[1]}'")
        self.advance()
        return ("radd", node, self._int("an integer immediate after '+'"))

    def _items(self, close: str, open_tok: Tok) -> list[tuple]:
        self._nested += 1
        try:
            items = [self._operand()]
            while self.accept(","):
                items.append(self._operand())
        finally:
            self._nested -= 1
        t = self.peek()
        if t[1] != close or t[0] == STR:
            raise self.error(
                f"expected ',' or {close!r} to close the {open_tok[1]!r} at column "
                f"{self.src.location(open_tok[2])[1]}, found {self._describe(t)}"
            )
        self.advance()
        return items

    def _address(self) -> tuple:
        open_tok = self.advance()
        if self.at("]"):
            raise self.error("expected an address inside '[ ]', found ']'")
        self._nested += 1
        try:
            first = self._operand()
            if self.at(","):
                items = [first]
                while self.accept(","):
                    items.append(self._operand())
                self.expect("]", "']' closing the operand list")
                return ("brk", tuple(items))
        finally:
            self._nested -= 1
        off = 0
        if first[0] == "sym":
            off = first[2]
            first = ("sym", first[1], 0)
        if first[0] not in ("reg", "sym", "imm"):
            raise self.error("expected a register, variable or immediate address inside '[ ]'", open_tok)
        if self.at("+") or self.at("-"):
            sign = -1 if self.advance()[1] == "-" else 1
            off += sign * self._int("an integer offset after '+' in the address")
        t = self.peek()
        if t[1] != "]" or t[0] == STR:
            if t[1] in ("+", "-", "*") and t[0] == PUNCT:
                raise self.error(f"expected ']' closing the address, found {t[1]!r} (an address is base, base+offset or base-offset)")
            raise self.error(f"expected ']' closing the address, found {self._describe(t)}")
        self.advance()
        suffix = ""
        if self.peek()[1] == ".unified":
            suffix = self.advance()[1]
        return ("addr", first, off, suffix)


_CLOSER = {"{": "}", "[": "]", "(": ")"}
#: constant-expression operators by precedence (C's), two-character ones first
_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10,
}
_OPERATORS_2 = frozenset(op for op in _PRECEDENCE if len(op) == 2)
_OPERATORS_1 = frozenset(op for op in _PRECEDENCE if len(op) == 1)
_BINARY_START = frozenset(op[0] for op in _PRECEDENCE) | {"?"}


def _apply(op: str, a: int, b: int, error) -> int:
    if op in ("/",) and b == 0:
        raise error("division by zero in a constant expression")
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise error(f"shift by {b} in a constant expression (0 to 63)")
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q  # C truncates toward zero
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: (a << b) & ((1 << 64) - 1), ">>": lambda: a >> b,
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
    }[op]()
#: (declared register type, instruction type) pairs known to fit (``isa.register_fits``)
_FITS: dict[tuple[str, tuple], bool] = {}
_SECTION_SCAN = re.compile(r'[{}]|"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)


def _declared_names(ops: Sequence[Operation]) -> list[str]:
    """The names that declarations (variables, functions) among ``ops`` declare."""
    out = []
    for op in ops:
        if isinstance(op, VarOp):
            out.append(op.var_name)
        elif isinstance(op, FuncOp):
            out.append(op.func_name)
    return out


def _link_ops(block: Block, ops: list[Operation]) -> None:
    """Append freshly created, unattached ``ops`` to an empty ``block``.

    The same links ``Block.add_ops`` makes, without its per-op checks (the
    ops are new, so they have no parent and cannot contain the block)."""
    prev = None
    for op in ops:
        op.parent = block
        if prev is not None:
            op._prev_op = prev
            prev._next_op = op
        prev = op
    if ops:
        block._first_op = ops[0]
        block._last_op = prev


def _set_successors(op: Operation, blocks: Sequence[Block]) -> None:
    """``op.successors = blocks`` for an op that has none yet: the same
    successor tuple and block use lists the setter makes, minus its
    generic bookkeeping."""
    uses = []
    for i, b in enumerate(blocks):
        use = Use(op, i)
        b.add_use(use)
        uses.append(use)
    op._successors = tuple(blocks)
    op._successor_uses = tuple(uses)


def _block_hint(label: str) -> str:
    """``$L__BB0_12`` -> ``$L__BB0.12`` (xDSL strips a ``_<digits>`` suffix)."""
    stem, sep, digits = label.rpartition("_")
    return f"{stem}.{digits}" if sep and digits.isdigit() else label


#: a valid xDSL block name (xdsl.ir.core's pattern for name hints)
_VALID_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*", re.A).fullmatch
_TERMINATORS = frozenset(
    [FallthroughOp, ImplicitReturnOp] + [c for c in INSTRUCTION_OPS.values() if c.ISA.terminator]
)


def _located(func, where: dict[str, tuple[str, int, int]]):
    """``func`` with the source positions of its performance directives (``FuncOp.directive_location``)."""
    if where:
        func.directive_locations = where
    return func


def parse_ptx(text: str, filename: str = "<stdin>", line_offset: int = 0, *, fast: bool = True) -> ModuleOp:
    """Parse PTX source into a ``builtin.module`` of ``ptx`` operations (register form).

    ``fast=False`` reads every statement with the token parser (tests compare
    the two)."""
    # The IR is one big live object graph: the cyclic GC would traverse it
    # again and again while it grows (quadratic time) and find nothing to free.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return PTXParser(text, filename, line_offset, fast=fast).parse_module()
    finally:
        if enabled:
            gc.enable()


def parse_ptx_file(path: str) -> ModuleOp:
    from .diagnostics import decode_source

    with open(path, "rb") as f:
        data = f.read()
    return parse_ptx(decode_source(data, path), path)
