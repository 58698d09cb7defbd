"""``WarpFunction``: the LLVM function ``warp_run(ws, ctx, warp)`` being built, and the
state every part of its lowering shares.

It holds the builder and gives access to the launch context words (``ctx``, ``abi.CTX_*``)
and the warp's state words (``ws``, ``abi.WS_*``), the frame (every emulated SSA value as
32 lanes in ``ws``: ``read``/``write`` merge by a lane mask), the lane ids and special
registers, the symbols' addresses, masked gathers and scatters, block counters and the
error exits.  The instructions' lowering (``emitter.py``, ``semantics/``), the memory
model (``addressing.py``) and the control flow (``warp.py``) build on it.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import SSAValue

from hypa.ptxdialect.dialect import InstructionOp

from ... import abi
from ..program import KernelProgram, value_bits
from .irbuild import broadcast, helper_function, lowest_lane
from .rules import LoweringError
from .types import LANES, MASK, VPTR, i8, i32, i64, ivec, ptr, vec, vector_suffix


class WarpFunction:
    """The warp function under construction (see the module's docstring)."""

    #: context words that do not change while a warp runs: loaded once, at entry
    STABLE_WORDS = frozenset([
        abi.CTX_PARAM, abi.CTX_WIN_BASE, abi.CTX_WIN_SIZE, abi.CTX_WIN_STRIDE, abi.CTX_NWIN,
        abi.CTX_SHARED, abi.CTX_SHARED_SIZE, abi.CTX_LOCAL, abi.CTX_LOCAL_SIZE, abi.CTX_CONST,
        abi.CTX_CONST_SIZE, abi.CTX_CPARAM, abi.CTX_CPARAM_SIZE, abi.CTX_NTID, abi.CTX_NTID + 1,
        abi.CTX_NTID + 2, abi.CTX_NCTAID, abi.CTX_NCTAID + 1, abi.CTX_NCTAID + 2, abi.CTX_CTAID,
        abi.CTX_CTAID + 1, abi.CTX_CTAID + 2, abi.CTX_COUNTERS, abi.CTX_NWARPS,
        abi.CTX_NTHREADS, abi.CTX_DYN_SHARED, abi.CTX_SMCOUNT, abi.CTX_FLAT_START, abi.CTX_FLAT_END, abi.CTX_FLAT_N,
        abi.CTX_SHADOW_SHARED, abi.CTX_SHADOW_LOCAL,
    ])

    def __init__(self, prog: KernelProgram, module: ir.Module):
        self.prog = prog
        self.module = module
        self._intrinsics: dict[str, ir.Function] = {}
        fnty = ir.FunctionType(i32, [ptr, ptr, i32])
        self.fn = ir.Function(module, fnty, "warp_run")
        self.fn.args[0].add_attribute("noalias")
        self.fn.args[1].add_attribute("noalias")
        self.ws, self.ctx, self.warp = self.fn.args
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        #: the lanes running the code being built (``<32 x i1>``)
        self.active: ir.Value = None  # type: ignore[assignment]
        #: the PTX block being built (reported by error exits)
        self.cur_block = 0
        #: the warp's step count (an alloca the subclass makes at entry)
        self.steps: ir.Value = None  # type: ignore[assignment]
        self._frame = self.b.gep(self.ws, [ir.Constant(i64, abi.WS_FRAME_BYTES_OFFSET)], source_etype=i8)
        self._stable: dict[int, ir.Value] = {}
        self.local_values: dict[SSAValue, ir.Value] = {}
        #: frame values written in the current LLVM block: (value, lanes written,
        #: block); reads under the same active lanes use the value, not a reload
        #: (a load right after a masked store of the same slot cannot forward)
        self.written: dict[SSAValue, tuple[ir.Value, ir.Value, ir.Block]] = {}
        #: set while an instruction that reads other lanes' registers is lowered
        self.cross_lane = False
        self._fail_bb: ir.Block | None = None
        self._slot_ptrs: dict[int, ir.Value] = {}
        self._unlikely = None  # the branch weights of an error exit
        self._stable_ptrs: dict[int, ir.Value] | None = {}

    # -- intrinsics and lanes -----------------------------------------------------------

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        f = self._intrinsics.get(name)
        if f is None:
            existing = self.module.globals.get(name)
            if existing is not None:
                f = existing  # type: ignore[assignment]
            else:
                f = ir.Function(self.module, ir.FunctionType(ret, args), name)
            self._intrinsics[name] = f
        return f

    def splat(self, value, ty: ir.Type) -> ir.Constant:
        return ir.Constant(vec(ty), value)

    def splat_value(self, v: ir.Value) -> ir.Value:
        return broadcast(self.b, v)

    def mask_to_i32(self, m: ir.Value) -> ir.Value:
        return self.b.bitcast(m, i32)

    def i32_to_mask(self, m: ir.Value) -> ir.Value:
        return self.b.bitcast(m, MASK)

    def popcount(self, mask: ir.Value) -> ir.Value:
        m = self.mask_to_i32(mask) if mask.type == MASK else mask
        return self.b.call(self.intrinsic("llvm.ctpop.i32", i32, [i32]), [m])

    def vector_pointers(self, base: ir.Value, idx: ir.Value, elem_bytes: int) -> ir.Value:
        """``base + idx * elem_bytes`` for every lane (``base`` a pointer, ``idx`` i64 lanes)."""
        b = self.b
        bi = self.splat_value(b.ptrtoint(base, i64))
        return b.inttoptr(b.add(bi, b.mul(idx, self.splat(elem_bytes, i64))), VPTR)

    def gather_function(self, vt: ir.VectorType) -> ir.Function:
        return self.intrinsic(f"llvm.masked.gather.{vector_suffix(vt)}.v32p0", vt, [VPTR, MASK, vt])

    def scatter_function(self, vt: ir.VectorType) -> ir.Function:
        return self.intrinsic(f"llvm.masked.scatter.{vector_suffix(vt)}.v32p0", ir.VoidType(), [vt, VPTR, MASK])

    def masked_gather(self, ptrs: ir.Value, mask: ir.Value, passthru: ir.Value) -> ir.Value:
        """The lanes of ``mask`` loaded from ``ptrs``; the others are ``passthru``'s."""
        return self.b.call(self.gather_function(passthru.type), [ptrs, mask, passthru])

    def masked_scatter(self, value: ir.Value, ptrs: ir.Value, mask: ir.Value) -> None:
        self.b.call(self.scatter_function(value.type), [value, ptrs, mask])

    # -- context and warp state -----------------------------------------------------------

    def ctx_word(self, index: int) -> ir.Value:
        v = self._stable.get(index)
        if v is not None:
            return v
        p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
        if index == abi.CTX_BUDGET:
            # a signal handler may zero it mid-launch (runtime/emulator/interrupt.py): read at
            # every loop head, never hoisted out of the loop
            return self.b.load_atomic(p, "monotonic", 8, typ=i64)
        return self.b.load(p, typ=i64)

    def load_stable_words(self) -> None:
        for index in sorted(self.STABLE_WORDS):
            if self.prog.heap_calls and index in (abi.CTX_FLAT_START, abi.CTX_FLAT_END, abi.CTX_FLAT_N):
                continue  # the device heap's malloc/free rewrite the flat table during the launch
            p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
            self._stable[index] = self.b.load(p, typ=i64)

    def ctx_ptr(self, index: int) -> ir.Value:
        if index in self._stable and self._stable_ptrs is not None:  # made once, in the entry block
            p = self._stable_ptrs.get(index)
            if p is None:
                with self.b.goto_block(self.entry):
                    p = self._stable_ptrs[index] = self.b.inttoptr(self._stable[index], ptr)
            return p
        return self.b.inttoptr(self.ctx_word(index), ptr)

    def set_ctx_word(self, index: int, value: ir.Value) -> None:
        p = self.b.gep(self.ctx, [ir.Constant(i64, index)], source_etype=i64)
        self.b.store(value, p)

    def ws_word_ptr(self, index: int | ir.Value) -> ir.Value:
        idx = ir.Constant(i64, index) if isinstance(index, int) else index
        return self.b.gep(self.ws, [idx], source_etype=i64)

    def ws_word(self, index: int | ir.Value) -> ir.Value:
        return self.b.load(self.ws_word_ptr(index), typ=i64)

    def set_ws_word(self, index: int | ir.Value, value: ir.Value) -> None:
        self.b.store(value, self.ws_word_ptr(index))

    def counter_add(self, index: int, value: ir.Value) -> None:
        """Add ``value`` to the launch counter ``index`` (``abi.CTX_COUNTERS``)."""
        b = self.b
        base = self.ctx_ptr(abi.CTX_COUNTERS)
        p = b.gep(base, [ir.Constant(i64, index)], source_etype=i64)
        b.store(b.add(b.load(p, typ=i64), value if value.type == i64 else b.zext(value, i64)), p)

    # -- leaving the function ---------------------------------------------------------------

    def ret(self, code: int) -> None:
        """Leave warp_run: publish the step count, return ``code``."""
        b = self.b
        self.set_ctx_word(abi.CTX_STEPS, b.load(self.steps, typ=i64))
        b.ret(ir.Constant(i32, code))

    def stop(self, code: int, block: int) -> None:
        """Record the warp error ``code`` at PTX block ``block`` and return RC_ERROR."""
        self.set_ctx_word(abi.CTX_ERR_CODE, ir.Constant(i64, code))
        self.set_ctx_word(abi.CTX_ERR_BLOCK, ir.Constant(i64, block))
        self.set_ctx_word(abi.CTX_ERR_WARP, self.b.zext(self.warp, i64))
        self.ret(abi.RC_ERROR)

    def _fail_block(self) -> ir.Block:
        """The block that returns RC_ERROR (one per function: every check's failure jumps there)."""
        if self._fail_bb is None:
            self._fail_bb = self.fn.append_basic_block("fail")
            with self.b.goto_block(self._fail_bb):
                self.ret(abi.RC_ERROR)
        return self._fail_bb

    def fail_exit(self) -> None:
        """Leave after an error was recorded: the warp function returns RC_ERROR (a helper
        being built, ``outline.py``, returns failure to its caller, which then does)."""
        self.b.branch(self._fail_block())

    def leave_if(self, failed: ir.Value) -> None:
        """Return RC_ERROR if ``failed`` (an i1: a helper recorded an error); else go on."""
        cont = self.fn.append_basic_block()
        br = self.b.cbranch(failed, self._fail_block(), cont)
        if self._unlikely is None:  # made once: llvmlite looks a node up by its text
            br.set_weights([1, 99])
            self._unlikely = br.metadata["prof"]
        else:
            br.set_metadata("prof", self._unlikely)
        self.b.position_at_end(cont)

    def error_if(self, instr: int | ir.Value, bad: ir.Value, code: int, addr: ir.Value | None,
                 block: int | None = None) -> None:
        """If any lane of ``bad`` is set: record the error (instruction ``instr``, -1 for
        none; its first lane and that lane's ``addr``) and return RC_ERROR."""
        b = self.b
        bits = self.mask_to_i32(bad)
        anybad = b.icmp_unsigned("!=", bits, ir.Constant(i32, 0))
        with b.if_then(anybad, likely=False):
            where = self.cur_block if block is None else block
            args = [self.ctx, ir.Constant(i64, code), as_i64(instr), as_i64(where), bits, self.warp]
            if addr is not None:
                args.append(addr if addr.type == ivec(64) else b.zext(addr, ivec(64)))
            b.call(error_function(self.module, addr is not None), args)
            self.fail_exit()

    # -- frame ------------------------------------------------------------------------------

    def slot_ptr(self, v: SSAValue) -> ir.Value:
        """The frame slot of ``v`` (its address computed once, in the entry block)."""
        off = self.prog.slots.get(v)
        if off is None:
            raise LoweringError(f"internal: value {v.name_hint} has no frame slot")
        p = self._slot_ptrs.get(off)
        if p is None:
            with self.b.goto_block(self.entry):
                p = self._slot_ptrs[off] = self.b.gep(self._frame, [ir.Constant(i64, off)], source_etype=i8)
        return p

    def read(self, v: SSAValue) -> ir.Value:
        lv = self.local_values.get(v)
        if lv is not None:
            return lv
        w = self.written.get(v)
        if w is not None and w[2] is self.b.block and (w[1] is None or (w[1] is self.active and not self.cross_lane)):
            return w[0]  # right in every lane (None), or in the active lanes, the only ones the reader looks at
        bits = value_bits(v)
        p = self.slot_ptr(v)
        if bits == 1:
            return self.i32_to_mask(self.b.load(p, typ=i32, align=4))
        return self.b.load(p, typ=ivec(max(bits, 8)), align=64)

    def _resize(self, value: ir.Value, vt: ir.VectorType) -> ir.Value:
        """Integer lanes zero-extended or truncated to ``vt``."""
        if value.type.element.width < vt.element.width:  # type: ignore[attr-defined]
            return self.b.zext(value, vt)
        return self.b.trunc(value, vt)

    def write(self, v: SSAValue, value: ir.Value, mask: ir.Value, blend: bool = False) -> None:
        """Store ``value`` in the lanes of ``mask``; other lanes keep their value.

        ``blend``: merge with the slot's old value and store the whole vector
        (for block arguments, whose old value the block has usually loaded
        already): the next block's load then forwards from the store, which it
        cannot from a masked store -- a loop's carried values are reloaded on
        every trip."""
        bits = value_bits(v)
        if v in self.prog.local_values:
            # used only later in this block, by the same lanes: no frame slot
            if bits == 1 and value.type != MASK:
                value = self.b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
            elif bits != 1 and value.type.element.width != max(bits, 8):  # type: ignore[attr-defined]
                value = self._resize(value, ivec(max(bits, 8)))
            self.local_values[v] = value
            return
        p = self.slot_ptr(v)
        if bits == 1:
            old = self.i32_to_mask(self.b.load(p, typ=i32, align=4))
            new = self.b.select(mask, value, old)
            self.b.store(self.mask_to_i32(new), p, align=4)
            self.written[v] = (new, None, self.b.block)
            return
        vt = ivec(max(bits, 8))
        if value.type != vt:
            value = self._resize(value, vt)
        if blend:
            new = self.b.select(mask, value, self.read(v))
            self.b.store(new, p, align=64)
            self.written[v] = (new, None, self.b.block)
            return
        st = self.intrinsic(f"llvm.masked.store.v32i{vt.element.width}.p0", ir.VoidType(), [vt, ptr, MASK])
        self.b.call(st, [value, p, mask])
        if mask is self.active:
            self.written[v] = (value, mask, self.b.block)
        else:
            self.written.pop(v, None)

    # -- guards -------------------------------------------------------------------------------

    def guard_lanes(self, op: InstructionOp) -> ir.Value | None:
        """The lanes whose guard predicate (``@p``, ``@!p``) holds; None without a guard."""
        g = op.guard_pred
        if g is None:
            return None
        gv = self.read(op.operands[0])
        return self.b.not_(gv) if g[1] else gv

    def executing_lanes(self, op: InstructionOp) -> ir.Value:
        """The active lanes that execute ``op`` (its guard holds)."""
        g = self.guard_lanes(op)
        return self.active if g is None else self.b.and_(self.active, g)

    # -- lanes and special registers ------------------------------------------------------

    def setup_lanes(self) -> None:
        """Lane ids, thread indices and the lanes that are threads of the CTA (``valid``)."""
        b = self.b
        lane_c = ir.Constant(ivec(32), list(range(LANES)))
        self.lane_ids = lane_c
        wbase = b.mul(self.warp, ir.Constant(i32, LANES))
        self.thread_lin = b.add(self.splat_value(wbase), lane_c)  # <32 x i32>
        ntx = b.trunc(self.ctx_word(abi.CTX_NTID), i32)
        nty = b.trunc(self.ctx_word(abi.CTX_NTID + 1), i32)
        nthreads = b.trunc(self.ctx_word(abi.CTX_NTHREADS), i32)
        vx = self.splat_value(ntx)
        vy = self.splat_value(nty)
        self.tid_x = b.urem(self.thread_lin, vx)
        q = b.udiv(self.thread_lin, vx)
        self.tid_y = b.urem(q, vy)
        self.tid_z = b.udiv(q, vy)
        self.valid = b.icmp_unsigned("<", self.thread_lin, self.splat_value(nthreads))

    def special_register(self, name: str) -> ir.Value:
        """The value of a special register (``%tid.x``, ``%laneid``, ...) in every lane."""
        b = self.b
        comp = {"x": 0, "y": 1, "z": 2}
        base, _, c = name.partition(".")
        if base == "%tid":
            return {"x": self.tid_x, "y": self.tid_y, "z": self.tid_z}[c or "x"]
        if base in ("%ntid", "%nctaid", "%ctaid"):
            idx = {"%ntid": abi.CTX_NTID, "%nctaid": abi.CTX_NCTAID, "%ctaid": abi.CTX_CTAID}[base] + comp[c or "x"]
            return self.splat_value(b.trunc(self.ctx_word(idx), i32))
        if base == "%laneid":
            return self.lane_ids
        if base == "%warpid":
            return self.splat_value(self.warp)
        if base == "%nwarpid":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_NWARPS), i32))
        if base in ("%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"):
            one = self.splat(1, i32)
            eq = b.shl(one, self.lane_ids)
            if base == "%lanemask_eq":
                return eq
            lt = b.sub(eq, one)
            if base == "%lanemask_lt":
                return lt
            if base == "%lanemask_le":
                return b.or_(lt, eq)
            ge = b.not_(lt)
            if base == "%lanemask_ge":
                return ge
            return b.xor(ge, eq)
        if base.startswith(("%clock", "%globaltimer")):
            # the clock model (runtime/emulator/clock.py): the device's cycles at the launch's
            # start plus this context's warp-instructions so far, at CPI cycles each
            t = b.add(self.ctx_word(abi.CTX_CLOCK), b.mul(b.load(self.steps, typ=i64), self.ctx_word(abi.CTX_CLOCK_CPI)))
            if base.startswith("%globaltimer"):  # nanoseconds at the clock rate
                t = b.udiv(b.mul(t, ir.Constant(i64, 1000)), self.ctx_word(abi.CTX_CLOCK_MHZ))
            if base.endswith("_hi"):
                t = b.lshr(t, ir.Constant(i64, 32))
            return self.splat_value(t if base in ("%clock64", "%globaltimer") else b.trunc(t, i32))
        if base == "%nsmid":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_SMCOUNT), i32))
        if base == "%dynamic_smem_size":
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_DYN_SHARED), i32))
        if base in ("%total_smem_size", "%aggr_smem_size"):
            return self.splat_value(b.trunc(self.ctx_word(abi.CTX_SHARED_SIZE), i32))
        if base in ("%envreg1", "%envreg2"):  # a cooperative launch's grid workspace: high, low word
            w = self.ctx_word(abi.CTX_GRID_WORKSPACE)
            return self.splat_value(b.trunc(b.lshr(w, ir.Constant(i64, 32)) if base == "%envreg1" else w, i32))
        # %smid, %gridid, %envregN, %pmN, cluster registers of a 1-CTA cluster
        # a launch without clusters: each CTA is a cluster of one (%cluster_ctaid, %cluster_ctarank
        # and %is_explicit_cluster are 0), so the clusters are the CTAs
        if base in ("%cluster_nctaid", "%cluster_nctarank"):
            return self.splat(1, i32)
        if base in ("%clusterid", "%nclusterid"):
            idx = (abi.CTX_CTAID if base == "%clusterid" else abi.CTX_NCTAID) + comp[c or "x"]
            return self.splat_value(b.trunc(self.ctx_word(idx), i32))
        return self.splat(0, i32)

    # -- symbols ------------------------------------------------------------------------------

    def _symbol(self, name: str) -> tuple[str, int | None]:
        """(kind, address) of a variable or parameter: the offset in its state space, the
        generic address for a global; ("reg", None) for any other name."""
        p = self.prog
        for n, _t, off, _s in p.params:
            if n == name:
                return "param", off
        if name in p.call_params:
            return "cparam", p.call_params[name].offset
        for kind, variables in (("shared", p.shared_vars), ("local", p.local_vars), ("local", p.frame_vars),
                                ("const", p.const_vars)):
            if name in variables:
                return kind, variables[name].offset
        if name in p.global_vars:
            gid = list(p.global_vars).index(name) + abi.WIN_FIRST_GLOBAL
            return "global", gid << abi.WINDOW_SHIFT
        return "reg", None

    def symbol_kind(self, name: str) -> str:
        return self._symbol(name)[0]

    def symbol_address(self, name: str, offset: int) -> ir.Value:
        """The address a symbol denotes, as i64 lanes: state-space offset for
        shared/local/const/param variables, a global address for globals."""
        address = self._symbol(name)[1]
        if address is None:
            if name == "WARP_SZ":
                address = 32  # the ISA's predefined constant: threads per warp
            else:
                address = abi.function_address(name)  # mov.u64 %rd, func
        elif name in self.prog.frame_vars:
            # a .local variable of a recursive function: in the running call's frame
            fp = self.ws_word(abi.WS_FP)
            return self.splat_value(self.b.add(fp, ir.Constant(i64, address + offset)))
        return self.splat(address + offset, i64)


def as_i64(v: int | ir.Value) -> ir.Value:
    """An instruction or block number: a constant, or a helper's parameter (``outline.py``)."""
    return ir.Constant(i64, v) if isinstance(v, int) else v


def error_function(module: ir.Module, with_addr: bool) -> ir.Function:
    """``void hypa_error[_addr](ctx, i64 code, i64 instr, i64 block, i32 lanes, i32 warp[,
    <32 x i64> addr])``: records an error of the lowest lane of ``lanes`` (and its address)
    in the context words.  Out of line: every check has an error exit, and it runs once."""
    args = [ptr, i64, i64, i64, i32, i32] + ([ivec(64)] if with_addr else [])
    f, new = helper_function(module, "hypa_error_addr" if with_addr else "hypa_error", ir.VoidType(), args)
    if not new:
        return f
    f.attributes.add("noinline")
    f.attributes.add("cold")
    ctx, code, instr, block, lanes, warp, *addr = f.args
    b = ir.IRBuilder(f.append_basic_block("entry"))

    def put(k: int, v: ir.Value) -> None:
        b.store(v, b.gep(ctx, [ir.Constant(i64, k)], source_etype=i64))

    lane = lowest_lane(b, module, lanes)
    put(abi.CTX_ERR_CODE, code)
    put(abi.CTX_ERR_INSTR, instr)
    put(abi.CTX_ERR_BLOCK, block)
    put(abi.CTX_ERR_LANE, b.zext(lane, i64))
    put(abi.CTX_ERR_WARP, b.zext(warp, i64))
    if addr:
        put(abi.CTX_ERR_ADDR, b.extract_element(addr[0], lane))
    b.ret_void()
    return f
