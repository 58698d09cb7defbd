; Module-level data in every form the NVPTX back end prints, used by a kernel:
;  - a .const lookup table with an initializer,
;  - a .global counter and a .global array of generic pointers to other
;    globals (printed with generic() initializers),
;  - half-precision arithmetic (add/mul/fma on f16 and a <2 x half> pair),
;  - a counted loop with a data-independent trip count.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@table = internal addrspace(4) constant [8 x i32] [i32 1, i32 1, i32 2, i32 3, i32 5, i32 8, i32 13, i32 21], align 4
@counter = addrspace(1) global i32 0, align 4
@scale = addrspace(1) global float 1.5, align 4
@ptrs = addrspace(1) global [2 x ptr] [ptr addrspacecast (ptr addrspace(1) @counter to ptr),
                                       ptr addrspacecast (ptr addrspace(1) @scale to ptr)], align 8

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare half @llvm.fma.f16(half, half, half)

define ptx_kernel void @globals(ptr addrspace(1) %out, ptr addrspace(1) %h, i32 %reps) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %k = and i32 %tid, 7
  %tp = getelementptr inbounds [8 x i32], ptr addrspace(4) @table, i32 0, i32 %k
  %t = load i32, ptr addrspace(4) %tp, align 4
  %sp = load ptr, ptr addrspace(1) getelementptr inbounds ([2 x ptr], ptr addrspace(1) @ptrs, i32 0, i32 1), align 8
  %s = load float, ptr %sp, align 4
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %jn, %loop ]
  %acc = phi i32 [ %t, %entry ], [ %accn, %loop ]
  %m = mul i32 %acc, 3
  %accn = add i32 %m, %j
  %jn = add i32 %j, 1
  %more = icmp slt i32 %jn, %reps
  br i1 %more, label %loop, label %exit
exit:
  %f = sitofp i32 %accn to float
  %r = fmul float %f, %s
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %r, ptr addrspace(1) %po, align 4
  %old = atomicrmw add ptr addrspace(1) @counter, i32 1 monotonic, align 4
  %ph = getelementptr inbounds <2 x half>, ptr addrspace(1) %h, i32 %tid
  %hv = load <2 x half>, ptr addrspace(1) %ph, align 4
  %h0 = extractelement <2 x half> %hv, i32 0
  %h1 = extractelement <2 x half> %hv, i32 1
  %hs = fadd half %h0, %h1
  %hm = fmul half %h0, %h1
  %hf = call half @llvm.fma.f16(half %hs, half %hm, half 0xH3C00)
  %v1 = insertelement <2 x half> %hv, half %hf, i32 0
  %v2 = fmul <2 x half> %v1, <half 0xH4000, half 0xH3800>
  store <2 x half> %v2, ptr addrspace(1) %ph, align 4
  ret void
}
