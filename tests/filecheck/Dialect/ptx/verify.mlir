// The verifier checks every instruction against the ISA table, whatever form the IR came in
// (generic form here, which bypasses the PTX front end): one mistake per case, each reported
// with the operation it concerns and a non-zero exit without --verify-diagnostics.
// RUN: hypa-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not hypa-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=FAIL
// FAIL: error: {{.*}}unknown modifier '.s33' for 'add'

// An unknown modifier.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    // CHECK: 'ptx.add': unknown modifier '.s33' for 'add'
    "ptx.add"() <{mods = ".s33", args = #ptx.args<"%r2, %r1, 1">}> : () -> ()
    "ptx.ret"() <{mods = "", args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A missing operand.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    // CHECK: 'ptx.add' expects 3 operands, found 2: '%r2, %r1'
    "ptx.add"() <{mods = ".s32", args = #ptx.args<"%r2, %r1">}> : () -> ()
    "ptx.ret"() <{mods = "", args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A written operand that is not a register.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    // CHECK: 'ptx.mov': operand 1 ('5') is written, so it must be a register
    "ptx.mov"() <{mods = ".u32", args = #ptx.args<"5, %r1">}> : () -> ()
    "ptx.ret"() <{mods = "", args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Modifiers that belong to another instruction of the table.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    // CHECK: 'ptx.red': modifiers '.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32' make this a 'red.async', not a 'red'
    "ptx.red"() <{mods = ".async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32", args = #ptx.args<"[%rd1], %r1, [%rd2]">}> : () -> ()
    "ptx.ret"() <{mods = "", args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// SSA form: a guard that is not a predicate register.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    %r1 = ptx.entry_value "%r1" : !ptx.reg<"b32">
    %r2 = ptx.entry_value "%r2" : !ptx.reg<"b32">
    // CHECK: 'ptx.add': the guard must be a predicate register, found !ptx.reg<"b32">
    %r3 = ptx.add ".s32" "%r2, %r1, 1" if "%p1" (%r1, %r1, %r2 : !ptx.reg<"b32">, !ptx.reg<"b32">, !ptx.reg<"b32">) : !ptx.reg<"b32">
    ptx.ret "" ""
  }) {hypa.ssa} : () -> ()
}) : () -> ()

// -----

// SSA form: an operand missing for what the instruction reads.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.tuple<"('.visible',)">, params = #ptx.tuple<"()">, directives = #ptx.tuple<"()">}> ({
    %r1 = ptx.entry_value "%r1" : !ptx.reg<"b32">
    // CHECK: 'ptx.add' in SSA form expects 2 operands and 1 results for '%r2, %r1, %r1', got 1 and 1
    %r2 = ptx.add ".s32" "%r2, %r1, %r1" (%r1 : !ptx.reg<"b32">) : !ptx.reg<"b32">
    ptx.ret "" ""
  }) {hypa.ssa} : () -> ()
}) : () -> ()

