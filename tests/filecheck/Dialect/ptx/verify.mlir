// The verifier checks every instruction against the ISA table, whatever form the IR came in
// (generic form here, which bypasses the PTX front end): one mistake per case, each reported
// with the operation it concerns and a non-zero exit without --verify-diagnostics.
// RUN: hypa-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not hypa-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=FAIL
// FAIL: error: {{.*}}unknown modifier '.s33' for 'add'

// An unknown modifier.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    // CHECK: 'ptx.add': unknown modifier '.s33' for 'add'
    "ptx.add"() <{mods = #ptx.mods<".s33">, args = #ptx.args<"%r2, %r1, 1">}> : () -> ()
    "ptx.ret"() <{mods = #ptx.mods<>, args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A missing operand.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    // CHECK: 'ptx.add' expects 3 operands, found 2: '%r2, %r1'
    "ptx.add"() <{mods = #ptx.mods<type = ".s32">, args = #ptx.args<"%r2, %r1">}> : () -> ()
    "ptx.ret"() <{mods = #ptx.mods<>, args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A written operand that is not a register.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    // CHECK: 'ptx.mov': operand 1 ('5') is written, so it must be a register
    "ptx.mov"() <{mods = #ptx.mods<type = ".u32">, args = #ptx.args<"5, %r1">}> : () -> ()
    "ptx.ret"() <{mods = #ptx.mods<>, args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Modifiers that belong to another instruction of the table.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    // CHECK: 'ptx.red': modifiers '.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32' make this a 'red.async', not a 'red'
    "ptx.red"() <{mods = #ptx.mods<".async", ordering = ".relaxed", scope = ".cluster", space = ".shared::cluster", ".mbarrier::complete_tx::bytes", ".add", type = ".u32">, args = #ptx.args<"[%rd1], %r1, [%rd2]">}> : () -> ()
    "ptx.ret"() <{mods = #ptx.mods<>, args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// SSA form: a guard that is not a predicate register.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    %r1 = ptx.entry_value "%r1" : !ptx.reg<"b32">
    %r2 = ptx.entry_value "%r2" : !ptx.reg<"b32">
    // CHECK: 'ptx.add': the guard must be a predicate register, found !ptx.reg<"b32">
    %r3 = ptx.add <type = ".s32"> "%r2, %r1, 1" if "%p1" (%r1, %r1, %r2 : !ptx.reg<"b32">, !ptx.reg<"b32">, !ptx.reg<"b32">) : !ptx.reg<"b32">
    ptx.ret <> ""
  }) {hypa.ssa} : () -> ()
}) : () -> ()

// -----

// SSA form: an operand missing for what the instruction reads.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    %r1 = ptx.entry_value "%r1" : !ptx.reg<"b32">
    // CHECK: 'ptx.add' in SSA form expects 2 operands and 1 results for '%r2, %r1, %r1', got 1 and 1
    %r2 = ptx.add <type = ".s32"> "%r2, %r1, %r1" (%r1 : !ptx.reg<"b32">) : !ptx.reg<"b32">
    ptx.ret <> ""
  }) {hypa.ssa} : () -> ()
}) : () -> ()


// -----

// SSA form: an operand register whose type does not fit the instruction type.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    %f1 = ptx.entry_value "%f1" : !ptx.reg<"f32">
    %rd1 = ptx.entry_value "%rd1" : !ptx.reg<"b64">
    // CHECK: 'ptx.add' 'add.f32 %f2, %f1, %rd1': operand 3 ('%rd1') is a .b64 register, which does not fit the instruction type .f32
    %f2 = ptx.add <type = ".f32"> "%f2, %f1, %rd1" (%f1, %rd1 : !ptx.reg<"f32">, !ptx.reg<"b64">) : !ptx.reg<"f32">
    ptx.ret <> ""
  }) {hypa.ssa} : () -> ()
}) : () -> ()

// -----

// Register form (generic, past the front end): the declared type decides.
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    "ptx.reg"() <{ptx_type = ".pred", names = #ptx.reg_names<"%p<2>">, scope = #builtin.int<0>}> : () -> ()
    "ptx.reg"() <{ptx_type = ".u16", names = #ptx.reg_names<"%h<2>">, scope = #builtin.int<0>}> : () -> ()
    // CHECK: 'ptx.selp' 'selp.b32 %h1, %h0, %h0, %p1': operand 1 ('%h1') is a .u16 register, which does not fit the instruction type .b32
    "ptx.selp"() <{mods = #ptx.mods<type = ".b32">, args = #ptx.args<"%h1, %h0, %h0, %p1">}> : () -> ()
    "ptx.ret"() <{mods = #ptx.mods<>, args = #ptx.args<"">}> : () -> ()
  }) : () -> ()
}) : () -> ()
