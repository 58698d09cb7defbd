"""Every ISA entry that stays parse-only or without emulator semantics on purpose says why, as
data (``isa.UNSUPPORTED_REASONS``), and the reasons hold: those naming a later target are
rejected by ``ptxas -arch=sm_90`` and accepted for that target, those naming a PTX ISA newer
than 9.0 are rejected by this ptxas for every target (issue 16: "no parse-only entry left that
the sm_90 ptxas accepts, except those marked with a reason")."""

from __future__ import annotations

import re

import pytest
from helpers import emulate, kernel, ptxas, requires

from hypa.ptxdialect import isa
from hypa.runtime.emulator.lowering import LoweringError, supported_entries

#: entries that other parts of issue 16 give semantics (textures and surfaces, mbarrier, bulk
#: copies, cluster addressing, stmatrix/movmatrix, the stack): not this test's to explain
OTHER_WORK = frozenset(
    "tex tld4 txq suld sust sured suq istypep mapa getctarank barrier.cluster stmatrix movmatrix st.async "
    "red.async st.bulk stacksave stackrestore alloca cp.async.mbarrier.arrive".split()
) | {i.name for i in isa.INSTRUCTIONS if i.name.startswith(("mbarrier.", "cp.async.bulk", "cp.reduce.async.bulk"))
     and i.name != "mbarrier.check_layout"}

CONTROL = {"bra", "brx.idx", "ret", "exit", "trap", "call"}

#: one statement of each entry with a reason (registers of _REGS)
STATEMENTS = {
    "clmad": "clmad.lo.u64 %rd3, %rd4, %rd5, %rd6;",
    "multimem.ld_reduce": "multimem.ld_reduce.relaxed.sys.global.add.u32 %r5, [%rd2];",
    "multimem.st": "multimem.st.relaxed.sys.global.f32 [%rd2], %f1;",
    "multimem.red": "multimem.red.relaxed.sys.global.add.u32 [%rd2], %r2;",
    "multimem.st.async": "multimem.st.async.release.sys.global.f32 [%rd1], %f1;",
    "multimem.red.async": "multimem.red.async.release.sys.global.add.u32 [%rd1], %r3;",
    "multimem.cp.async.bulk": "multimem.cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 256;",
    "multimem.cp.reduce.async.bulk": "multimem.cp.reduce.async.bulk.global.shared::cta.bulk_group.xor.b64 [%rd1], [%r1], 256;",
    "tensormap.replace": "tensormap.replace.tile.rank.global.b1024.b32 [%rd2], 2;",
    "tensormap.cp_fenceproxy": "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd2], [%r2], 128;",
    "tcgen05.alloc": "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 32;",
    "tcgen05.dealloc": "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r20, 32;",
    "tcgen05.relinquish_alloc_permit": "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
    "tcgen05.ld": "tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r4, %r5}, [%r20];",
    "tcgen05.st": "tcgen05.st.sync.aligned.32x32b.x2.b32 [%r1], {%r2, %r3};",
    "tcgen05.wait": "tcgen05.wait::ld.sync.aligned;",
    "tcgen05.cp": "tcgen05.cp.cta_group::1.128x256b [%r20], %rd3;",
    "tcgen05.shift": "tcgen05.shift.cta_group::1.down [%r20];",
    "tcgen05.mma": "tcgen05.mma.cta_group::1.kind::f16 [%r20], %rd3, %rd4, %r4, %p1;",
    "tcgen05.commit": "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [%rd2];",
    "tcgen05.fence": "tcgen05.fence::after_thread_sync;",
    "fabric.try_get": "fabric.try_get.async.shared::cta.mbarrier::complete_tx::bytes.mbarrier::report::fabric.relaxed.sys.b128 [%r1], [%r5, %rd8], 16, [%r2];",
    "fabric.try_put": "fabric.try_put.async.shared::cta.mbarrier::complete_tx::16B.mbarrier::report::fabric.counted::bytes.relaxed.sys.b128 [%r5, %rd8, %rd9], [%r1], 16, [%r2];",
    "fabric.try_red": "fabric.try_red.async.multimem.shared::cta.mbarrier::complete_tx::16B.mbarrier::report::fabric.relaxed.sys.min.u32 [%r5, %rd8], [%r1], 16, [%r2];",
    "fabric.try_pullred": "fabric.try_pullred.async.multimem.shared::cta.mbarrier::complete_tx::bytes.mbarrier::report::fabric.relaxed.sys.add.u32.sync [%r1], [%r5, %rd8], 16, [%r2], 0xffffffff;",
    "fabric.submit": "fabric.submit.op_restrict::fetching;",
    "fabric.wait": "fabric.wait.sync_restrict::reads;",
    "clusterlaunchcontrol.try_cancel": "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r2], [%r3];",
    "clusterlaunchcontrol.query_cancel": "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p1, %q1;",
    "mbarrier.check_layout": "mbarrier.check_layout.layout::v1.shared::cta.b64 %p2, [%r1];",
}

_REGS = """\
    .reg .pred %p<4>;
    .reg .b16 %h<4>;
    .reg .b32 %r<30>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<30>;
    .reg .b128 %q<4>;
"""


def _module(statement: str, target: str, version: str = "9.0") -> str:
    return kernel("k()", f"    {statement}\n    ret;", regs=_REGS, target=target, version=version)


def test_each_entry_without_semantics_or_parse_only_says_why():
    emulated = supported_entries() | CONTROL
    silent = sorted(i.name for i in isa.INSTRUCTIONS
                    if (i.status == "parse" or i.name not in emulated) and not i.unsupported_reason
                    and i.name not in OTHER_WORK)
    assert not silent, f"give these a reason in isa.UNSUPPORTED_REASONS: {silent}"
    # a reason is for an entry that is parse-only or not emulated
    for name, why in isa.UNSUPPORTED_REASONS.items():
        instr = isa.INSTRUCTIONS_BY_NAME[name]
        assert instr.status == "parse" or name not in emulated, name
        assert isa.unsupported_reason(name) == why and why.strip() == why and "|" not in why
    assert set(STATEMENTS) == set(isa.UNSUPPORTED_REASONS)


def test_the_emulators_error_quotes_the_reason():
    src = _module("multimem.ld_reduce.relaxed.sys.global.add.u32 %r5, [%rd2];", "sm_90")
    with pytest.raises(LoweringError) as err:
        emulate(src, mode="full")
    assert str(err.value) == ("'multimem.ld_reduce.relaxed.sys.global.add.u32' has no emulator semantics: "
                              + isa.UNSUPPORTED_REASONS["multimem.ld_reduce"])


def _target(why: str) -> str | None:
    m = re.match(r"(sm_\d+a?) (?:and later )?only \(ptxas -arch=sm_90 rejects it\)", why)
    return m.group(1) if m else None


def test_every_reason_is_of_a_known_kind():
    for name, why in isa.UNSUPPORTED_REASONS.items():
        assert _target(why) or re.match(r"PTX ISA 9\.[1-9], ", why) or "several GPUs" in why \
            or "tensor map" in why, (name, why)


@requires("ptxas")
@pytest.mark.parametrize("name", sorted(isa.UNSUPPORTED_REASONS))
def test_reason_holds_for_ptxas(name, tmp_path):
    why = isa.UNSUPPORTED_REASONS[name]
    f = tmp_path / "k.ptx"

    def accepted(target: str) -> bool:
        f.write_text(_module(STATEMENTS[name], target))
        return ptxas(f, target).returncode == 0

    target = _target(why)
    if target is not None:  # later architectures only
        assert not accepted("sm_90") and accepted(target), why
    elif why.startswith("PTX ISA 9."):  # newer than this ptxas: no target takes it
        assert not any(accepted(t) for t in ("sm_90", "sm_90a", "sm_100a")), why
    else:  # sm_90 takes it: the reason is not the target
        assert accepted("sm_90"), why
