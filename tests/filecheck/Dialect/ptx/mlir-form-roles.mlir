// A role must be the one the ISA table gives the modifier: a one-line error naming both.
// RUN: not hypa-opt %s 2>&1 | filecheck %s
// CHECK: '.f32' is a type modifier, not rounding
"builtin.module"() ({
  "ptx.func"() <{symbol = "k", kind = ".entry", linkage = #ptx.words<".visible">, params = #ptx.params<"">, directives = #ptx.directives<"">}> ({
    ptx.add <rounding = ".f32"> "%f1, %f2, %f3"
    ptx.ret <> ""
  }) : () -> ()
}) : () -> ()
