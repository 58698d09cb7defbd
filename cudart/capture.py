"""``hypa run --capture DIR``: every launch as a launch spec (docs/design.md section 6)
with the input it had, so ``hypa profile DIR`` replays any launch later, alone, with the
same counts.

Written before the launch runs: the kernel's module (``module_<n>.ptx``, once), one
``[[launch]]`` per launch in ``launches.toml``, and as buffers (``buffers/<sha>.npy``,
identical contents stored once): for each pointer parameter, the bytes of its allocation
from the pointer to the allocation's end, and the module variables the kernel uses
(``variables``).  A buffer holding addresses of other allocations (an array of pointers)
cannot be replayed faithfully; the launch's comment says so.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scalar(raw: bytes, ptx_type: str):
    t = ptx_type.lstrip(".")
    kind, bits = t[0], int(t[1:]) if t[1:].isdigit() else 0
    if kind == "f" and bits in (32, 64):
        v = float(np.frombuffer(raw, np.float32 if bits == 32 else np.float64)[0])
        return repr(v) if np.isfinite(v) else {"bytes": raw.hex()}
    if kind in "subp" and bits in (8, 16, 32, 64) and len(raw) == bits // 8:
        v = int.from_bytes(raw, "little", signed=kind == "s")
        return str(v)
    return {"bytes": raw.hex()}


def capture_launch(rt, rec, prog) -> None:
    d = rt.opts.capture
    os.makedirs(os.path.join(d, "buffers"), exist_ok=True)
    m = rt._module_of(rec)
    ptx_name = f"module_{m.index}.ptx"
    ptx_path = os.path.join(d, ptx_name)
    if not os.path.exists(ptx_path):
        with open(ptx_path, "w") as f:
            f.write(m.ptx)
    starts = rt.memory.tables()[0]
    buffers: dict[str, int] = {}
    notes: list[str] = []

    def store(raw: np.ndarray, label: str) -> str:
        digest = hashlib.sha256(raw.tobytes()).hexdigest()[:16]
        path = os.path.join(d, "buffers", digest + ".npy")
        if not os.path.exists(path):  # identical contents are stored once
            np.save(path, raw)
        name = f"l{rec.index}_{label}"  # one buffer per parameter: distinct allocations stay distinct
        buffers[name] = (raw.nbytes, digest)
        words = raw[: raw.nbytes // 8 * 8].view(np.uint64)
        if len(starts) and words.size:
            idx = np.searchsorted(starts.view(np.uint64), words, side="right") - 1
            ok = idx >= 0
            if ok.any() and any(rt.memory.find(int(w)) is not None for w in words[ok][:4096]):
                notes.append(f"buffer {name} holds device addresses; a replay cannot follow them")
        return name

    args = []
    textures: list[str] = []
    for (pname, ptx_type, _off, size), raw in zip(prog.params, rec.launch.args):
        a = None
        if size == 8 and ptx_type in (".u64", ".b64", ".s64"):
            addr = int.from_bytes(raw, "little")
            alloc = rt.memory.find(addr)
            tex = rt.textures.objects.get(addr) if alloc is None else None
            if tex is not None:
                texels = np.ctypeslib.as_array(
                    (np.ctypeslib.ctypes.c_uint8 * max(tex.footprint, 1)).from_address(tex.address)).copy()
                a = f"l{rec.index}_{pname}_tex"
                textures += _texture_table(a, store(texels, pname), tex)
            elif alloc is not None:
                n = alloc.start + alloc.size - addr
                arr = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * n).from_address(addr)).copy()
                a = store(arr, pname)
        args.append(_toml_str(a) if a is not None else _toml_value(_scalar(raw, ptx_type)))
    variables = {}
    for name in list(prog.global_vars) + list(prog.const_vars):
        arr = m.storage.get(name)
        if arr is not None and name in m.initialised:
            variables[name] = store(np.array(arr, np.uint8), "var_" + name.strip("$").replace(".", "_"))
    lines = [f"# launch {rec.index} of {rt.opts.program}"] + [f"# note: {n}" for n in dict.fromkeys(notes)]
    lines += ["[[launch]]", f"file = {_toml_str(ptx_name)}", f"kernel = {_toml_str(rec.kernel)}",
              f"grid = {list(rec.launch.grid)}", f"block = {list(rec.launch.block)}",
              f"shared_bytes = {rec.launch.shared_bytes}", f"args = [{', '.join(args)}]"]
    if variables:
        lines.append("variables = { " + ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in variables.items()) + " }")
    for name, (nbytes, digest) in buffers.items():
        lines += [f"[buffers.{_toml_str(name)}]", 'dtype = "uint8"', f"count = {nbytes}",
                  f'init = {{ file = "buffers/{digest}.npy" }}']
    lines += textures
    with open(os.path.join(d, "launches.toml"), "a") as f:
        f.write("\n".join(lines) + "\n\n")


def _texture_table(name: str, buffer: str, d) -> list[str]:
    """The ``[textures.NAME]`` (or ``[surfaces.NAME]``) table of ``TextureDesc`` ``d``."""
    out = [f"[{'surfaces' if d.surface else 'textures'}.{_toml_str(name)}]", f"buffer = {_toml_str(buffer)}",
           f"format = {_toml_str(d.format)}", f"width = {d.width}"]
    out += [f"{k} = {getattr(d, k)}" for k in ("height", "depth", "layers") if getattr(d, k)]
    out.append(f"pitch = {d.pitch}")
    if not d.surface:
        out += ["address_mode = [" + ", ".join(_toml_str(m) for m in d.address_mode) + "]",
                f"filter_mode = {_toml_str(d.filter_mode)}", f"read_mode = {_toml_str(d.read_mode)}",
                f"normalized_coords = {str(d.normalized_coords).lower()}"]
        out += [f"{k} = true" for k in ("cubemap", "linear") if getattr(d, k)]
    return out


def _toml_value(v) -> str:
    if isinstance(v, dict):
        return "{ bytes = " + _toml_str(v["bytes"]) + " }"
    return str(v)
