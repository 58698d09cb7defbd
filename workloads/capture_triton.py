"""Capture a PyTorch model's Triton kernels and launches for ``hypa profile``.

Runs ON a GPU machine (PyTorch + Triton + CUDA).  It compiles the model with
``torch.compile`` (Inductor emits Triton kernels), runs one inference, and
records every Triton launch: the kernel's PTX, grid, block (num_warps x 32),
dynamic shared memory, scalar arguments and, for each tensor argument, its
dtype and the number of elements from its data pointer to the end of its
storage.  The output folder holds ``kernels/*.ptx``, ``launches.toml``
(docs/guide.md, "Launch specification", one ``[[launch]]`` per launch with ``file =``) and
``capture.json`` (versions, device, command, diagnostics)::

    python workloads/capture_triton.py --model resnet18 --out workloads/resnet18

Tensor contents are not recorded (floating-point data does not steer the
control flow of these kernels; buffers are filled with seeded random values);
integer tensors are recorded when small, since they may index memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from collections import OrderedDict

DTYPES = {
    "torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "uint16",
    "torch.float64": "float64", "torch.int32": "int32", "torch.int64": "int64", "torch.int8": "int8",
    "torch.uint8": "uint8", "torch.bool": "uint8", "torch.int16": "int16",
}


class Recorder:
    def __init__(self, out: str):
        self.out = out
        self.kernels: "OrderedDict[str, str]" = OrderedDict()  # file name -> ptx
        self.launches: list[dict] = []
        self.diag: list[str] = []
        self.int_arrays: dict[str, object] = {}
        self.inside = False
        self.unattributed = 0

    def kernel_file(self, ck) -> str:
        ptx = ck.asm["ptx"] if isinstance(ck.asm, dict) else ck.asm.get("ptx")
        name = ck.metadata.name if hasattr(ck.metadata, "name") else ck.metadata["name"]
        h = hashlib.sha1(ptx.encode()).hexdigest()[:8]
        fname = f"{name}_{h}.ptx"
        self.kernels.setdefault(fname, ptx)
        return fname

    def record(self, ck, run_args: tuple) -> None:
        import torch

        try:
            grid = [int(run_args[0]), int(run_args[1]), int(run_args[2])]
            md = ck.metadata
            num_warps = md.num_warps if hasattr(md, "num_warps") else md["num_warps"]
            shared = md.shared if hasattr(md, "shared") else md["shared"]
            fname = self.kernel_file(ck)
            ptx = self.kernels[fname]
            nparams = _entry_param_count(ptx)
            # kernel arguments follow the launcher's control arguments; the
            # trailing ones are the kernel's (constexprs may be passed too)
            rest = list(run_args[3:])
            kargs = self._kernel_args(ck, rest, nparams)
            args = []
            buffers = {}
            k = len(self.launches)
            for i, a in enumerate(kargs):
                if isinstance(a, torch.Tensor):
                    st = a.untyped_storage()
                    end = st.data_ptr() + st.nbytes()
                    count = max(1, (end - a.data_ptr()) // a.element_size())
                    bname = f"l{k}_a{i}"
                    dt = DTYPES.get(str(a.dtype), "uint8")
                    spec = {"dtype": dt, "count": int(count)}
                    if a.dtype in (torch.int32, torch.int64) and count <= 1 << 16:
                        flat = torch.empty(0, dtype=a.dtype, device=a.device)
                        flat.set_(st, a.storage_offset(), (count,), (1,))
                        self.int_arrays[bname] = flat.cpu().numpy()
                        spec["init"] = {"file": f"data/{bname}.npy"}
                    elif dt.startswith("float"):
                        spec["init"] = {"random": {"seed": k * 31 + i, "low": -1.0, "high": 1.0}}
                    else:
                        spec["init"] = "zeros"
                    buffers[bname] = spec
                    args.append(bname)
                elif a is None:
                    args.append(0)
                else:
                    args.append(a if not isinstance(a, bool) else int(a))
            while len(args) < nparams:
                args.append(0)  # launcher-appended scratch pointers: null
            self.launches.append({
                "file": f"kernels/{fname}", "kernel": _entry_name(ptx), "grid": grid,
                "block": [32 * int(num_warps), 1, 1], "shared_bytes": int(shared), "args": args,
                "buffers": buffers,
            })
            if len(kargs) + 0 != nparams and len(self.diag) < 20:
                self.diag.append(f"{fname}: {len(kargs)} kernel args for {nparams} PTX params; run args: "
                                 + ", ".join(type(x).__name__ for x in run_args))
        except Exception as e:  # never break the model run
            self.diag.append(f"record failed: {type(e).__name__}: {e}")

    def _kernel_args(self, ck, rest: list, nparams: int) -> list:
        """The kernel's own arguments among the launcher's."""
        import torch

        # skip the control arguments: stream, function, metadata, hooks ...
        i = 0
        while i < len(rest) and not (isinstance(rest[i], torch.Tensor)):
            i += 1
        # back up over leading scalars that belong to the kernel: count from the end
        tail = rest[i:]
        sig = getattr(getattr(ck, "src", None), "signature", None)
        if isinstance(sig, dict):
            types = list(sig.values())
            if len(rest) >= len(types):
                tail = rest[len(rest) - len(types):]
                tail = [a for a, t in zip(tail, types) if t != "constexpr"]
                return tail
        if len(tail) > nparams:
            tail = tail[:nparams]
        return tail

    def write(self, meta: dict) -> None:
        os.makedirs(os.path.join(self.out, "kernels"), exist_ok=True)
        os.makedirs(os.path.join(self.out, "data"), exist_ok=True)
        used = {L["file"].split("/", 1)[1] for L in self.launches}
        self.kernels = OrderedDict((k, v) for k, v in self.kernels.items() if k in used)
        for fname, ptx in self.kernels.items():
            with open(os.path.join(self.out, "kernels", fname), "w") as f:
                f.write(ptx)
        import numpy as np

        for name, arr in self.int_arrays.items():
            np.save(os.path.join(self.out, "data", name + ".npy"), arr)
        with open(os.path.join(self.out, "launches.toml"), "w") as f:
            f.write(to_toml(self.launches))
        meta["diagnostics"] = self.diag
        meta["unattributed_launches"] = self.unattributed
        meta["launches"] = len(self.launches)
        meta["kernels"] = len(self.kernels)
        with open(os.path.join(self.out, "capture.json"), "w") as f:
            json.dump(meta, f, indent=1)


def _entry_param_count(ptx: str) -> int:
    m = re.search(r"\.entry\s+[\w$]+\s*\((.*?)\)", ptx, re.S)
    return len(re.findall(r"\.param\b", m.group(1))) if m else 0


def _entry_name(ptx: str) -> str:
    m = re.search(r"\.entry\s+([\w$]+)", ptx)
    return m.group(1) if m else ""


def _toml_value(v) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not isinstance(v, float) or v == v else '"nan"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(launches: list[dict]) -> str:
    out = ["# captured by workloads/capture_triton.py; one [[launch]] per kernel launch, in order\n"]
    bufs = []
    for L in launches:
        out.append("[[launch]]")
        for k in ("file", "kernel", "grid", "block", "shared_bytes", "args"):
            out.append(f"{k} = {_toml_value(L[k])}")
        out.append("")
        bufs.extend(L["buffers"].items())
    for name, spec in bufs:
        out.append(f"[buffers.{name}]")
        for k, v in spec.items():
            out.append(f"{k} = {_toml_value(v)}")
        out.append("")
    return "\n".join(out)


def install_hook(rec: Recorder) -> str:
    """Record every launch of a Triton CompiledKernel.

    Triton 3.x keeps the launcher behind ``CompiledKernel.run`` -- a property in
    recent versions (an instance attribute in older ones) -- so both are
    wrapped; the driver's launcher class is wrapped too, for launch paths that
    call it directly.  Each launch is recorded once.
    """
    from triton.compiler import compiler as tc

    CK = tc.CompiledKernel
    notes = []
    wrapped_cache: dict[int, object] = {}

    def wrap(ck, run):
        key = id(run)
        w = wrapped_cache.get(key)
        if w is None:
            def w(*args, **kw):
                rec.record(ck, args)
                return run(*args, **kw)

            w._hypa = True
            try:
                run._hypa_ck = ck
            except Exception:
                pass
            wrapped_cache[key] = w
        return w

    prop = CK.__dict__.get("run")
    if isinstance(prop, property):
        def getter(self, _p=prop):
            return wrap(self, _p.fget(self))

        CK.run = property(getter, prop.fset, prop.fdel)
        notes.append("CompiledKernel.run property")
    orig = CK._init_handles

    def _init_handles(self, *a, **k):
        r = orig(self, *a, **k)
        run = self.__dict__.get("run")
        if run is not None and not getattr(run, "_hypa", False):
            self.__dict__["run"] = wrap(self, run)
        return r

    CK._init_handles = _init_handles
    notes.append("CompiledKernel._init_handles")
    try:
        from triton.backends.nvidia import driver as nvd

        L = nvd.CudaLauncher
        call = L.__call__

        def lcall(self, *args, **kw):
            ck = getattr(self, "_hypa_ck", None)
            if ck is not None and not rec.inside:
                pass  # recorded by the CompiledKernel wrapper
            elif ck is None:
                rec.unattributed += 1
            return call(self, *args, **kw)

        L.__call__ = lcall
        notes.append("CudaLauncher.__call__ (counts unattributed launches)")
    except Exception as e:  # pragma: no cover
        notes.append(f"no CudaLauncher hook: {e}")
    return "; ".join(notes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="default", help="torch.compile mode")
    ap.add_argument("--run-only", action="store_true",
                    help="no recording: compile, warm up, then run once inside the NVTX range 'hypa_run' "
                         "(for Nsight Compute: ncu --nvtx --nvtx-include 'hypa_run/')")
    a = ap.parse_args()
    if a.run_only:
        return run_only(a)
    import torch
    import torchvision

    torch.manual_seed(0)
    import torch._inductor.config as icfg

    # launch through Triton's own launcher so the hook sees every launch
    for knob in ("use_static_triton_launcher", "use_static_cuda_launcher", "use_fast_triton_launcher",
                 "static_launch_user_defined_triton_kernels"):
        if hasattr(icfg, knob):
            setattr(icfg, knob, False)
    rec = Recorder(a.out)
    how = install_hook(rec)
    model = getattr(torchvision.models, a.model)(weights=None).cuda().eval()
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda")
    t0 = time.time()
    cm = torch.compile(model, mode=a.mode)
    with torch.no_grad():
        y = cm(x)  # compiles (autotuning launches kernels too) and runs
        torch.cuda.synchronize()
        t1 = time.time()
        n_first = len(rec.launches)
        rec.launches.clear()
        y = cm(x)  # the steady-state inference: what gets recorded
        torch.cuda.synchronize()
    import triton.compiler.compiler as tcc

    meta = {
        "ck_run_kind": type(tcc.CompiledKernel.__dict__.get("run")).__name__,
        "inductor_static_launcher": getattr(icfg, "use_static_triton_launcher", None),
        "command": " ".join([sys.executable, *sys.argv]),
        "model": a.model, "batch": a.batch, "size": a.size, "compile_mode": a.mode,
        "torch": torch.__version__, "triton": __import__("triton").__version__,
        "device": torch.cuda.get_device_name(), "hook": how,
        "first_run_seconds": round(t1 - t0, 2), "launches_first_run": n_first,
        "output_checksum": float(y.float().sum().item()),
    }
    rec.write(meta)
    print(json.dumps({k: meta[k] for k in ("launches", "kernels", "first_run_seconds", "device")}))
    for d in rec.diag[:10]:
        print("diag:", d)


def run_only(a) -> None:
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).cuda().eval()
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda")
    cm = torch.compile(model, mode=a.mode)
    with torch.no_grad():
        cm(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("hypa_run")
        cm(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
