; Calls in every shape the NVPTX back end prints:
;  - a direct call to an internal non-inlined function (plain .func),
;  - a .weak .func (linkonce/weak definition),
;  - an .extern .func declaration called directly (resolved at link time),
;  - an indirect call through a function pointer chosen per thread
;    (`mov.u64 %rd, fn;`, a call prototype, `call %rd, (...), prototype`).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

declare float @ext_transform(float, i32)

define internal float @square(float %x) #0 {
  %r = fmul float %x, %x
  ret float %r
}

define weak float @triple(float %x) #0 {
  %r = fmul float %x, 3.0
  ret float %r
}

define ptx_kernel void @calls(ptr addrspace(1) %data, i32 %use_ext) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr inbounds float, ptr addrspace(1) %data, i32 %tid
  %x = load float, ptr addrspace(1) %p, align 4
  %odd = and i32 %tid, 1
  %isodd = icmp ne i32 %odd, 0
  %fn = select i1 %isodd, ptr @square, ptr @triple
  %y = call float %fn(float %x)
  %z = call float @square(float %y)
  %ext = icmp ne i32 %use_ext, 0
  br i1 %ext, label %callext, label %store

callext:
  %w = call float @ext_transform(float %z, i32 %tid)
  br label %store

store:
  %v = phi float [ %z, %entry ], [ %w, %callext ]
  store float %v, ptr addrspace(1) %p, align 4
  ret void
}

attributes #0 = { noinline }
