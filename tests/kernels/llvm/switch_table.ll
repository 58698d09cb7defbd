; A dense switch on a per-thread selector: the NVPTX back end lowers it to a
; jump table, i.e. `.branchtargets` and `brx.idx` (which NVVM never emits).
; out[t] = f_sel[t](in[t]) for sel in 0..5, -1 otherwise.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @switch_table(ptr addrspace(1) readonly %sel, ptr addrspace(1) readonly %in,
                                     ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %ps = getelementptr inbounds i32, ptr addrspace(1) %sel, i32 %i
  %pi = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %i
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %i
  %s = load i32, ptr addrspace(1) %ps, align 4
  %x = load i32, ptr addrspace(1) %pi, align 4
  switch i32 %s, label %other [ i32 0, label %c0
                                i32 1, label %c1
                                i32 2, label %c2
                                i32 3, label %c3
                                i32 4, label %c4
                                i32 5, label %c5 ]
c0:
  %r0 = add i32 %x, 1
  br label %join
c1:
  %r1 = mul i32 %x, 3
  br label %join
c2:
  %r2 = xor i32 %x, 85
  br label %join
c3:
  %r3 = ashr i32 %x, 2
  br label %join
c4:
  %r4 = mul i32 %x, %x
  br label %join
c5:
  %r5 = sdiv i32 %x, 7
  br label %join
other:
  br label %join
join:
  %r = phi i32 [ %r0, %c0 ], [ %r1, %c1 ], [ %r2, %c2 ], [ %r3, %c3 ], [ %r4, %c4 ], [ %r5, %c5 ], [ -1, %other ]
  store i32 %r, ptr addrspace(1) %po, align 4
  ret void
}
