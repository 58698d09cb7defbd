; Block sum reduction: each warp reduces with shfl.sync.down, warp leaders
; write to a .shared array, a barrier, then warp 0 reduces the partial sums and
; thread 0 adds the block's total to *out with an atomic float add.
; Loops are kept as loops (the shuffle loop has a phi-carried offset).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@partial = internal addrspace(3) global [32 x float] undef, align 4

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)

define internal float @warp_sum(float %v0) alwaysinline {
entry:
  br label %loop
loop:
  %off = phi i32 [ 16, %entry ], [ %next, %loop ]
  %v = phi float [ %v0, %entry ], [ %sum, %loop ]
  %o = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %v, i32 %off, i32 31)
  %sum = fadd float %v, %o
  %next = lshr i32 %off, 1
  %more = icmp ne i32 %next, 0
  br i1 %more, label %loop, label %exit
exit:
  ret float %sum
}

define ptx_kernel void @block_sum(ptr addrspace(1) readonly %in, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %load, label %reduce
load:
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i32 %i
  %x = load float, ptr addrspace(1) %p, align 4
  br label %reduce
reduce:
  %v = phi float [ %x, %load ], [ 0.0, %entry ]
  %ws = call float @warp_sum(float %v)
  %lane = and i32 %tid, 31
  %warp = lshr i32 %tid, 5
  %leader = icmp eq i32 %lane, 0
  br i1 %leader, label %write, label %sync
write:
  %slot = getelementptr inbounds [32 x float], ptr addrspace(3) @partial, i32 0, i32 %warp
  store float %ws, ptr addrspace(3) %slot, align 4
  br label %sync
sync:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %w0 = icmp eq i32 %warp, 0
  br i1 %w0, label %final, label %done
final:
  %nw = lshr i32 %bdim, 5
  %has = icmp ult i32 %lane, %nw
  %pslot = getelementptr inbounds [32 x float], ptr addrspace(3) @partial, i32 0, i32 %lane
  %pv = load float, ptr addrspace(3) %pslot, align 4
  %pv0 = select i1 %has, float %pv, float 0.0
  %tot = call float @warp_sum(float %pv0)
  %t0 = icmp eq i32 %tid, 0
  br i1 %t0, label %atomic, label %done
atomic:
  %old = atomicrmw fadd ptr addrspace(1) %out, float %tot monotonic, align 4
  br label %done
done:
  ret void
}
