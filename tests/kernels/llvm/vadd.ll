; Vector addition in LLVM IR for the NVPTX back end (written for hypa's tests).
; vadd:  out[i] = a[i] + b[i] for i < n, scalar, with a .maxntid directive.
; vadd4: the same on float4 quads (ld.global.v4 / st.global.v4), n4 quads.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @vadd(ptr addrspace(1) noalias readonly %a, ptr addrspace(1) noalias readonly %b,
                             ptr addrspace(1) noalias %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %in = icmp slt i32 %i, %n
  br i1 %in, label %body, label %done

body:
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i32 %i
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %i
  %x = load float, ptr addrspace(1) %pa, align 4
  %y = load float, ptr addrspace(1) %pb, align 4
  %s = fadd float %x, %y
  store float %s, ptr addrspace(1) %po, align 4
  br label %done

done:
  ret void
}

define ptx_kernel void @vadd4(ptr addrspace(1) noalias readonly %a, ptr addrspace(1) noalias readonly %b,
                              ptr addrspace(1) noalias %out, i32 %n4) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %bdim
  %i = add i32 %base, %tid
  %in = icmp slt i32 %i, %n4
  br i1 %in, label %body, label %done

body:
  %pa = getelementptr inbounds <4 x float>, ptr addrspace(1) %a, i32 %i
  %pb = getelementptr inbounds <4 x float>, ptr addrspace(1) %b, i32 %i
  %po = getelementptr inbounds <4 x float>, ptr addrspace(1) %out, i32 %i
  %x = load <4 x float>, ptr addrspace(1) %pa, align 16
  %y = load <4 x float>, ptr addrspace(1) %pb, align 16
  %s = fadd <4 x float> %x, %y
  store <4 x float> %s, ptr addrspace(1) %po, align 16
  br label %done

done:
  ret void
}

attributes #0 = { "nvvm.maxntid"="256" }
