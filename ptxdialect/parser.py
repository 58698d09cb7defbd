"""PTX text -> ``ptx`` dialect in register form.

A recursive-descent parser over the token list of ``lexer.py``.  It builds one
operation per statement, splits bodies into blocks at labels and after every
terminator (``bra``, ``brx.idx``, ``ret``, ``exit``, ``trap``), makes
fall-through edges explicit, resolves registers against their (possibly
nested) declarations, and validates opcodes and modifiers against the ISA
table.  Errors are ``PTXSyntaxError`` with file, line and column.
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region

from . import isa
from .diagnostics import PTXSyntaxError, SourceFile
from .dialect import (
    INSTRUCTION_OPS,
    AddressSizeOp,
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
    TupleAttr,
    VarOp,
    VersionOp,
    new_func,
    new_op,
    string_attr,
)
from .lexer import EOF, NAME, NUM, PUNCT, STR, tokenize

LINKAGE = frozenset([".extern", ".visible", ".weak", ".common"])
VAR_SPACES = frozenset([".global", ".const", ".shared", ".local", ".param", ".tex"])
PERF_DIRECTIVES = frozenset(
    ".maxntid .reqntid .minnctapersm .maxnctapersm .maxnreg .noreturn .explicitcluster "
    ".reqnctapercluster .maxclusterrank .blocksareclusters .abi_preserve .abi_preserve_control "
    ".alias".split()
)
LABEL_DIRECTIVES = frozenset([".branchtargets", ".calltargets", ".callprototype"])
_OPAQUE_TYPES = frozenset([".texref", ".samplerref", ".surfref"])

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
    def __init__(self, text: str, filename: str = "<stdin>", line_offset: int = 0):
        self.src = SourceFile(text, filename, line_offset)
        self.toks = tokenize(self.src)
        self.i = 0
        self.scopes = _Scopes()

    # -- token helpers -------------------------------------------------------

    def error(self, message: str, tok: Tok | None = None) -> PTXSyntaxError:
        t = tok if tok is not None else self.toks[self.i]
        return PTXSyntaxError(self.src, t[2], message)

    def peek(self, k: int = 0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> Tok:
        t = self.toks[self.i]
        if t[0] != EOF:
            self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.toks[self.i][1] == text and self.toks[self.i][0] != STR

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Tok:
        t = self.toks[self.i]
        if t[1] != text or t[0] == STR:
            raise self.error(f"expected {what or repr(text)}, found {self._describe(t)}")
        self.i += 1
        return t

    def expect_kind(self, kind: str, what: str) -> Tok:
        t = self.toks[self.i]
        if t[0] != kind:
            raise self.error(f"expected {what}, found {self._describe(t)}")
        self.i += 1
        return t

    @staticmethod
    def _describe(t: Tok) -> str:
        return "end of file" if t[0] == EOF else repr(t[1])

    def _int(self, what: str) -> int:
        neg = self.accept("-")
        t = self.expect_kind(NUM, what)
        try:
            from .operands import parse_int_immediate

            v = parse_int_immediate(t[1])
        except ValueError:
            raise self.error(f"expected {what}, found {t[1]!r}", t) from None
        return -v if neg else v

    def _same_line(self, a: Tok, b: Tok) -> bool:
        end = a[2] + len(a[1])
        return self.src.text.find("\n", end, b[2]) < 0

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
        depth = 0
        while True:
            t = self.peek()
            if t[0] == EOF:
                raise self.error(f"expected {' or '.join(repr(s) for s in stops)} before end of file")
            if t[0] == PUNCT:
                if depth == 0 and t[1] in stops:
                    return out
                if t[1] in "{[(":
                    depth += 1
                elif t[1] in "}])":
                    depth -= 1
                    if depth < 0:
                        raise self.error(f"unbalanced {t[1]!r}")
            out.append(self.advance())

    # -- module --------------------------------------------------------------

    def parse_module(self) -> ModuleOp:
        ops: list[Operation] = []
        if self.peek()[1] != ".version":
            raise self.error(f"expected '.version' at the start of a PTX module, found {self._describe(self.peek())}")
        while self.peek()[0] != EOF:
            t = self.peek()
            if t[0] != NAME:
                raise self.error(f"expected a directive, found {self._describe(t)}")
            d = t[1]
            if d == ".version":
                self.advance()
                v = self.expect_kind(NUM, "a version number such as 8.5")
                ops.append(new_op(VersionOp, {"version": StringAttr(v[1])}))
            elif d == ".target":
                self.advance()
                names = [self.expect_kind(NAME, "a target name such as sm_90")[1]]
                while self.accept(","):
                    names.append(self.expect_kind(NAME, "a target name")[1])
                ops.append(new_op(TargetOp, {"targets": ArrayAttr([StringAttr(n) for n in names])}))
            elif d == ".address_size":
                self.advance()
                n = self._int("32 or 64")
                if n not in (32, 64):
                    raise self.error(f"address size must be 32 or 64, not {n}", t)
                ops.append(new_op(AddressSizeOp, {"size": IntAttr(n)}))
            elif d == ".file":
                self.advance()
                ops.append(self._raw(d, self._rest_of_line(t)))
            elif d == ".section":
                ops.append(self._section())
            elif d in (".alias", ".pragma"):
                self.advance()
                toks = self._until(";")
                self.expect(";")
                ops.append(self._raw(d, toks))
            elif d in LINKAGE or d in (".entry", ".func") or d in VAR_SPACES:
                ops.extend(self._declaration(module_level=True))
            else:
                raise self.error(f"unknown or misplaced directive {d!r} at module level")
        module = ModuleOp(ops)
        return module

    def _raw(self, directive: str, toks: list[Tok]) -> Operation:
        return new_op(RawDirectiveOp, {"directive": string_attr(directive), "text": StringAttr(_join(toks))})

    def _section(self) -> Operation:
        start = self.advance()
        name = self.expect_kind(NAME, "a section name such as .debug_info")
        open_tok = self.expect("{")
        depth = 1
        while depth:
            t = self.advance()
            if t[0] == EOF:
                raise self.error("unterminated '.section' (missing '}')", open_tok)
            if t[0] == PUNCT:
                if t[1] == "{":
                    depth += 1
                elif t[1] == "}":
                    depth -= 1
        close = self.toks[self.i - 1]
        body = self.src.text[open_tok[2] + 1 : close[2]]
        lines = [ln.strip() for ln in body.splitlines()]
        text = "\n".join(ln for ln in lines if ln and not ln.startswith("//"))
        del start
        return new_op(
            RawDirectiveOp,
            {"directive": string_attr(".section"), "text": StringAttr(f"{name[1]}\n{{\n{text}\n}}")},
        )

    def _declaration(self, module_level: bool) -> list[Operation]:
        linkage: list[str] = []
        while self.peek()[1] in LINKAGE:
            linkage.append(self.advance()[1])
        t = self.peek()
        if t[1] in (".entry", ".func"):
            if not module_level:
                raise self.error(f"{t[1]!r} is not allowed inside a function body")
            return [self._function(tuple(linkage))]
        if t[1] in VAR_SPACES:
            return self._variables(tuple(linkage))
        raise self.error(f"expected '.entry', '.func' or a state space after linkage, found {self._describe(t)}")

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
                quals.append((".align", self._int("an alignment")))
            elif t[1] in (".v2", ".v4", ".v8"):
                quals.append((t[1],))
            elif t[1] == ".attribute":
                self.expect("(")
                inner = self._until(")")
                self.expect(")")
                quals.append((f".attribute({_join(inner)})",))
            elif t[1] in isa.ALL_TYPES or t[1] in _OPAQUE_TYPES:
                ptx_type = t[1]
            elif t[1] in (".ptr", ".global", ".shared", ".const", ".local"):
                quals.append((t[1],))
            else:
                raise self.error(f"unexpected {t[1]!r} in a variable declaration", t)
        if ptx_type is None:
            raise self.error("expected a type such as .b32 in the variable declaration")
        ops: list[Operation] = []
        while True:
            name_tok = self.expect_kind(NAME, "a variable name")
            name = name_tok[1]
            dims: list[int] = []
            count = 0
            if self.accept("<"):
                count = self._int("a register count")
                self.expect(">")
            while self.accept("["):
                if self.accept("]"):
                    dims.append(-1)
                    continue
                dims.append(self._int("an array size"))
                self.expect("]")
            init = None
            if self.accept("="):
                init = _join(self._until(",", ";"))
            names = [f"{name}{i}" for i in range(count)] if count else [name]
            for n in names:
                ops.append(
                    new_op(
                        VarOp,
                        {"decl": TupleAttr.fast((linkage, space, tuple(quals), ptx_type, n, tuple(dims), init))},
                    )
                )
            if self.accept(","):
                continue
            self.expect(";", "';' after the variable declaration")
            return ops

    def _param_list(self) -> tuple:
        params: list[tuple] = []
        self.expect("(")
        if self.accept(")"):
            return ()
        while True:
            start = self.i
            space = self.peek()
            if space[1] not in (".param", ".reg"):
                raise self.error(f"expected '.param' or '.reg' in a parameter list, found {self._describe(space)}")
            toks = self._until(",", ")")
            decl = self.toks[start : self.i]
            names = [t for t in toks[1:] if t[0] == NAME and not t[1].startswith(".")]
            if not names:
                raise self.error("expected a parameter name", self.peek())
            types = [t[1] for t in toks if t[1] in isa.ALL_TYPES or t[1] in _OPAQUE_TYPES]
            align = None
            dims: list[int] = []
            for k, t in enumerate(toks):
                if t[1] == ".align" and k + 1 < len(toks):
                    align = int(toks[k + 1][1], 0)
                if t[1] == "[" and k + 1 < len(toks):
                    nxt = toks[k + 1]
                    dims.append(int(nxt[1], 0) if nxt[0] == NUM else -1)
            params.append((_join(decl), names[0][1], space[1], types[0] if types else "", align, tuple(dims)))
            if self.accept(")"):
                return tuple(params)
            self.expect(",")

    # -- functions -----------------------------------------------------------

    def _function(self, linkage: tuple[str, ...]) -> Operation:
        kind = self.advance()[1]
        ret_params = None
        if kind == ".func" and self.at("("):
            ret_params = self._param_list()
        name = self.expect_kind(NAME, "a function name")
        params: tuple = ()
        if self.at("("):
            params = self._param_list()
        directives: list[tuple[str, str]] = []
        while True:
            t = self.peek()
            if t[0] == NAME and t[1] in PERF_DIRECTIVES:
                self.advance()
                vals: list[Tok] = []
                while self.peek()[0] == NUM or self.at(","):
                    vals.append(self.advance())
                directives.append((t[1], _join(vals)))
            elif t[1] == ".pragma":
                self.advance()
                toks = self._until(";")
                self.expect(";")
                directives.append((".pragma", _join(toks)))
            else:
                break
        props = {
            "sym_name": StringAttr(name[1]),
            "kind": string_attr(kind),
            "linkage": TupleAttr.fast(linkage),
            "params": TupleAttr.fast(params),
            "directives": TupleAttr.fast(tuple(directives)),
        }
        if ret_params is not None:
            props["ret_params"] = TupleAttr.fast(ret_params)
        if self.accept(";"):
            return new_func(props, Region())
        if not self.at("{"):
            raise self.error(f"expected '{{' or ';' after the signature of {name[1]!r}, found {self._describe(self.peek())}")
        region = self._body()
        return new_func(props, region)

    # -- bodies --------------------------------------------------------------

    def _body(self) -> Region:
        self.expect("{")
        self.scopes = _Scopes()
        self.scopes.push()
        depth = 1
        blocks: list[list[Operation]] = [[]]
        labels: dict[str, int] = {}
        label_tok: dict[str, Tok] = {}
        open_block = True
        # (op, token, block index) of terminators whose successors wait for labels
        branches: list[tuple[Operation, Tok, int]] = []
        tables: dict[str, tuple[str, ...]] = {}
        ops = blocks[0]

        def start_block() -> list[Operation]:
            blocks.append([])
            return blocks[-1]

        while True:
            t = self.peek()
            kind, text = t[0], t[1]
            if kind == EOF:
                raise self.error("unexpected end of file: missing '}' at the end of the function body")
            if kind == PUNCT and text == "}":
                self.advance()
                depth -= 1
                if depth == 0:
                    break
                self.scopes.pop()
                if not open_block:
                    ops = start_block()
                    open_block = True
                ops.append(new_op(ScopeEndOp, {}))
                continue
            if kind == PUNCT and text == "{":
                self.advance()
                depth += 1
                self.scopes.push()
                if not open_block:
                    ops = start_block()
                    open_block = True
                ops.append(new_op(ScopeBeginOp, {}))
                continue
            if kind == NAME and self.peek(1)[1] == ":" and self.peek(1)[0] == PUNCT:
                # a label, or a labelled table directive
                self.advance()
                self.advance()
                nxt = self.peek()
                if nxt[1] in LABEL_DIRECTIVES:
                    self.advance()
                    toks = self._until(";")
                    self.expect(";")
                    if not open_block:
                        ops = start_block()
                        open_block = True
                    if nxt[1] == ".branchtargets":
                        names = tuple(x[1] for x in toks if x[0] == NAME)
                        tables[text] = names
                        ops.append(
                            new_op(BranchTargetsOp, {"label": StringAttr(text), "target_labels": TupleAttr.fast(names)})
                        )
                    else:
                        ops.append(self._raw(nxt[1], [t, (PUNCT, ":", t[2])] + toks))
                    continue
                if text in labels:
                    raise self.error(f"label {text!r} is defined twice", t)
                if open_block:
                    ops.append(None)  # type: ignore[arg-type]  # placeholder for the fall-through
                ops = start_block()
                open_block = True
                labels[text] = len(blocks) - 1
                label_tok[text] = t
                ops.append(new_op(LabelOp, {"label": StringAttr(text)}))
                continue
            if kind == NAME and text.startswith("."):
                if not open_block:
                    ops = start_block()
                    open_block = True
                ops.extend(self._body_directive())
                continue
            # an instruction
            op, is_term = self._instruction()
            if not open_block:
                ops = start_block()
                open_block = True
            ops.append(op)
            if is_term:
                branches.append((op, t, len(blocks) - 1))
                open_block = False
        self.scopes.pop()
        return self._assemble(blocks, labels, branches, tables, open_block)

    def _assemble(
        self,
        blocks: list[list[Operation]],
        labels: dict[str, int],
        branches: list[tuple[Operation, Tok, int]],
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
            xblocks[bi].name_hint = _block_hint(label)
        for bi, ops in enumerate(blocks):
            if ops and ops[-1] is None:
                ops[-1] = new_op(FallthroughOp, {}, [xblocks[bi + 1]])
            assert ops and _is_term(ops[-1]), "every block ends in a terminator"
        for op, tok, bi in branches:
            succs: list[Block] = []
            name = op.name
            if name == "ptx.bra":
                target = op.properties["args"].data[0]  # type: ignore[union-attr]
                if target[0] != "sym":
                    raise self.error("'bra' expects a label", tok)
                if target[1] not in labels:
                    raise self.error(f"branch to undefined label {target[1]!r}", tok)
                succs.append(xblocks[labels[target[1]]])
            elif name == "ptx.brx.idx":
                table = op.properties["args"].data[1]  # type: ignore[union-attr]
                if table[0] != "sym" or table[1] not in tables:
                    raise self.error("'brx.idx' expects a '.branchtargets' label as its second operand", tok)
                for lbl in tables[table[1]]:
                    if lbl not in labels:
                        raise self.error(f"branch table {table[1]!r} names undefined label {lbl!r}", tok)
                    succs.append(xblocks[labels[lbl]])
            if op.properties.get("guard") is not None:
                succs.append(xblocks[bi + 1])
            if succs:
                op.successors = succs
        for xb, ops in zip(xblocks, blocks):
            xb.add_ops(ops)
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
        if d == ".pragma":
            self.advance()
            toks = self._until(";")
            self.expect(";")
            return [self._raw(d, toks)]
        raise self.error(f"unknown or misplaced directive {d!r} in a function body")

    def _reg_decl(self) -> Operation:
        self.advance()
        quals: list[str] = []
        ptx_type = None
        while self.peek()[0] == NAME and self.peek()[1].startswith("."):
            q = self.advance()
            if q[1] in isa.ALL_TYPES:
                ptx_type = q[1]
            elif q[1] in (".v2", ".v4", ".v8"):
                quals.append(q[1])
            else:
                raise self.error(f"unexpected {q[1]!r} in a register declaration", q)
        if ptx_type is None:
            raise self.error("expected a register type such as .b32 or .pred")
        names: list[tuple[str, int]] = []
        while True:
            n = self.expect_kind(NAME, "a register name")
            count = 0
            if self.accept("<"):
                count = self._int("a register count")
                self.expect(">")
            names.append((n[1], count))
            self.scopes.declare(n[1], count, ptx_type)
            if not self.accept(","):
                break
        self.expect(";", "';' after the register declaration")
        props = {
            "ptx_type": string_attr(ptx_type),
            "names": TupleAttr.fast(tuple(names)),
            "scope": IntAttr(self.scopes.current),
        }
        if quals:
            props["qualifiers"] = TupleAttr.fast(tuple(quals))
        return new_op(RegDeclOp, props)

    # -- instructions --------------------------------------------------------

    def _instruction(self) -> tuple[Operation, bool]:
        guard = None
        if self.accept("@"):
            neg = self.accept("!")
            g = self.expect_kind(NAME, "a guard predicate after '@'")
            guard = (self._register(g), neg)
        t = self.peek()
        if t[0] != NAME or t[1].startswith("."):
            raise self.error(f"expected an instruction, found {self._describe(t)}")
        self.advance()
        try:
            instr, mods = isa.resolve_opcode(t[1])
        except isa.UnknownOpcode as e:
            raise self.error(f"unknown opcode {e.args[0]!r}", t) from None
        except isa.UnknownModifier as e:
            raise self.error(f"unknown modifier {e.modifier!r} for '{e.instr.name}'", t) from None
        args: list[tuple] = []
        if not self.at(";"):
            while True:
                args.append(self._operand())
                if not self.accept(","):
                    break
        if not self.at(";"):
            raise self.error(f"expected ',' or ';' after an operand of '{t[1]}', found {self._describe(self.peek())}")
        self.advance()
        if instr.arity is not None:
            lo, hi = instr.arity
            if not lo <= len(args) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise self.error(f"'{instr.name}' expects {want} operands, found {len(args)}", t)
        props = {"mods": string_attr(t[1][len(instr.name):]), "args": ArgsAttr.fast(tuple(args))}
        if guard is not None:
            props["guard"] = GuardAttr.fast(guard)
        return new_op(INSTRUCTION_OPS[instr.name], props), instr.terminator

    def _register(self, tok: Tok) -> tuple:
        name = tok[1]
        found = self.scopes.lookup(name)
        if found is not None:
            return ("reg", name, found[0])
        if name in isa.SPECIAL_REGISTERS:
            return ("sreg", name)
        if name.startswith("%"):
            raise self.error(f"use of undeclared register {name!r}", tok)
        raise self.error(f"expected a register, found {name!r}", tok)

    def _operand(self) -> tuple:
        node = self._primary()
        if self.at("|"):
            self.advance()
            return ("pair", node, self._primary())
        return node

    def _primary(self) -> tuple:
        t = self.peek()
        kind, text = t[0], t[1]
        if kind == PUNCT:
            if text == "!":
                self.advance()
                return ("not", self._primary())
            if text == "{":
                self.advance()
                return ("vec", tuple(self._items("}")))
            if text == "(":
                self.advance()
                return ("paren", () if self.accept(")") else tuple(self._items(")")))
            if text == "[":
                return self._address()
            if text == "-":
                self.advance()
                n = self.peek()
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
                return ("reg", text, found[0])
            if text in isa.SPECIAL_REGISTERS:
                return ("sreg", text)
            if text.startswith("%"):
                raise self.error(f"use of undeclared register {text!r}", t)
            off = 0
            if self.at("+") or (self.at("-") and self.peek(1)[0] == NUM):
                sign = -1 if self.advance()[1] == "-" else 1
                off = sign * self._int("an offset")
            return ("sym", text, off)
        raise self.error(f"expected an operand, found {self._describe(t)}")

    def _items(self, close: str) -> list[tuple]:
        items = [self._operand()]
        while self.accept(","):
            items.append(self._operand())
        self.expect(close, f"',' or {close!r}")
        return items

    def _address(self) -> tuple:
        open_tok = self.advance()
        first = self._operand()
        if self.at(","):
            items = [first]
            while self.accept(","):
                items.append(self._operand())
            self.expect("]", "']' closing the operand list")
            return ("brk", tuple(items))
        off = 0
        if first[0] == "sym":
            off = first[2]
            first = ("sym", first[1], 0)
        if self.at("+") or self.at("-"):
            sign = -1 if self.advance()[1] == "-" else 1
            off += sign * self._int("an address offset")
        if first[0] not in ("reg", "sym", "imm"):
            raise self.error("expected a register, variable or immediate address inside '[ ]'", open_tok)
        self.expect("]", "']' closing the address")
        suffix = ""
        if self.peek()[1] == ".unified":
            suffix = self.advance()[1]
        return ("addr", first, off, suffix)


def _block_hint(label: str) -> str:
    return re.sub(r"_(\d+)$", r".\1", label)


def _is_term(op: Operation) -> bool:
    from xdsl.traits import IsTerminator

    return op.has_trait(IsTerminator)


def parse_ptx(text: str, filename: str = "<stdin>", line_offset: int = 0) -> ModuleOp:
    """Parse PTX source into a ``builtin.module`` of ``ptx`` operations (register form)."""
    return PTXParser(text, filename, line_offset).parse_module()


def parse_ptx_file(path: str) -> ModuleOp:
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_ptx(f.read(), path)


class _FreeScopes(_Scopes):
    """Scopes for operand text in the MLIR form: registers are marked there."""


def parse_operand_text(text: str) -> tuple:
    """Operands from the MLIR form's ``args`` string.

    There are no declarations here: a ``%``-name is a register unless it is a
    special register, and a name followed by ``#N`` is a register of scope N.
    """
    p = PTXParser(text.replace("#", " # "), "<args>")
    p.scopes = _OperandTextScopes(p)
    args: list[tuple] = []
    if p.peek()[0] == EOF:
        return ()
    while True:
        args.append(p._operand())
        if not p.accept(","):
            break
    if p.peek()[0] != EOF:
        raise p.error(f"unexpected {p._describe(p.peek())} in operand text")
    return tuple(args)


class _OperandTextScopes(_Scopes):
    """Resolves registers syntactically (``%name`` or ``name # scope``)."""

    def __init__(self, parser: PTXParser):
        super().__init__()
        self.parser = parser
        self.stack = [(0, {}, {})]

    def lookup(self, name: str) -> tuple[int, str] | None:
        p = self.parser
        if p.at("#"):
            p.advance()
            return (p._int("a scope id"), "")
        if name.startswith("%") and name not in isa.SPECIAL_REGISTERS and name != "%cc":
            return (0, "")
        if name == "%cc":
            return (0, "")
        return None
