"""The inputs users have, turned into PTX: files, directories, globs; ``.ptx``,
``.cu`` (through ``nvcc -ptx``), and binaries that embed PTX -- fatbins,
host executables, shared libraries and object files (the ELF ``.nv_fatbin``
section).

Embedded PTX is extracted with ``cuobjdump -xptx all`` where that tool is
installed (on ``PATH``, under ``$CUDA_HOME/bin``, or from the
``nvidia-cuda-cuobjdump`` wheel), otherwise by reading the fatbin container
here:

* a fatbin is a 16-byte header (magic ``0xBA55ED50``, version, header size,
  size of the entries that follow) and a list of entries;
* an entry header gives its kind (1 = PTX, 2 = ELF/SASS), its header and
  payload sizes, the target architecture, flags (bit ``0x2000``: payload
  compressed with LZ4, bit ``0x8000``: with Zstandard), the compressed size
  and the size once decompressed.

LZ4 blocks are decompressed by the small decoder below; Zstandard needs the
optional ``zstandard`` package (or Python 3.14's ``compression.zstd``).  A
binary that holds SASS only (a cubin, or a fatbin built with
``code=sm_XX`` alone) has no PTX to analyse, and the message says how to
embed it.
"""

from __future__ import annotations

import glob
import os
import re
import struct
from dataclasses import dataclass, field

from hypa.ptxdialect.diagnostics import InputError

FATBIN_MAGIC = 0xBA55ED50
FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
ENTRY_PTX = 1
ENTRY_ELF = 2
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")

#: file name endings taken from a directory (other files are taken when they are ELF)
SOURCE_SUFFIXES = (".ptx", ".cu", ".cubin", ".fatbin", ".o", ".so", ".a")
_SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache"}


@dataclass
class Source:
    """PTX text from one input.  ``path`` is the input file; ``member`` names the
    piece of a binary the PTX came from (``None`` for a ``.ptx`` or ``.cu``)."""

    path: str
    ptx: str
    origin: str  # "ptx" | "cu" | "fatbin" | "elf"
    member: str | None = None
    arch: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.path if self.member is None else f"{self.path}[{self.member}]"

    @property
    def display(self) -> str:
        base = os.path.basename(self.path)
        return base if self.member is None else f"{base}[{self.member}]"


@dataclass
class FatbinEntry:
    kind: int
    arch: int
    flags: int
    payload: bytes  # decompressed
    compression: str | None  # "lz4" | "zstd" | None


# -- expanding arguments -----------------------------------------------------------------


def _has_glob(s: str) -> bool:
    return any(c in s for c in "*?[")


def _candidate(path: str) -> bool:
    name = os.path.basename(path)
    if name.endswith(SOURCE_SUFFIXES) or re.search(r"\.so(\.\d+)*$", name):
        return True
    if os.access(path, os.X_OK):
        try:
            with open(path, "rb") as f:
                return f.read(4) == ELF_MAGIC
        except OSError:
            return False
    return False


def expand_inputs(args: list[str]) -> tuple[list[str], list[str]]:
    """Files named by ``args`` (files, directories searched recursively, globs) and
    the ``launches.toml`` files found in the directories.  Order is kept; duplicates
    are dropped."""
    files: list[str] = []
    tomls: list[str] = []

    def add(p: str) -> None:
        p = os.path.abspath(p)
        if p not in files:
            files.append(p)

    for a in args:
        if os.path.isdir(a):
            for root, dirs, names in os.walk(a):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                for n in sorted(names):
                    p = os.path.join(root, n)
                    if n == "launches.toml":
                        tomls.append(os.path.abspath(p))
                    elif _candidate(p):
                        add(p)
        elif os.path.isfile(a):
            add(a)
        elif _has_glob(a):
            hits = sorted(h for h in glob.glob(a, recursive=True) if os.path.isfile(h))
            if not hits:
                raise InputError(f"no file matches '{a}'")
            for h in hits:
                add(h)
        else:
            raise InputError(f"no such file or directory: {a}")
    return files, tomls


# -- one input -> PTX ---------------------------------------------------------------------


@dataclass
class InputOptions:
    arch: str = "sm_90"  # for .cu
    nvcc_flags: list[str] = field(default_factory=list)
    ptx_arch: str | None = None  # which embedded PTX (compute_80, sm_80 or 80); default the newest
    cuobjdump: bool | None = None  # None: use it when found; False: always our reader


def load_sources(path: str, opts: InputOptions | None = None) -> list[Source]:
    """The PTX modules of one input file."""
    opts = opts or InputOptions()
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    if path.endswith((".cu", ".cuh")):
        return [compile_cuda(path, opts)]
    if data[:4] == ELF_MAGIC:
        return _binary_sources(path, data, opts, "elf")
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC:
        return _binary_sources(path, data, opts, "fatbin")
    if data[:8] == b"!<arch>\n":
        return _binary_sources(path, data, opts, "archive")
    from hypa.ptxdialect.diagnostics import decode_source

    return [Source(path, decode_source(data, path), "ptx")]


def find_tool(name: str) -> str | None:
    """``name`` on PATH, under $CUDA_HOME/bin or /usr/local/cuda/bin, or in an NVIDIA wheel."""
    import shutil  # this and subprocess/tempfile below: only for .cu files and binaries

    hit = shutil.which(name)
    if hit:
        return hit
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", name), os.X_OK):
            return os.path.join(root, "bin", name)
    try:
        import importlib.util

        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for base in (spec.submodule_search_locations or []) if spec else []:
        for cand in sorted(glob.glob(os.path.join(base, "*", "bin", name)), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    return None


def compile_cuda(path: str, opts: InputOptions) -> Source:
    nvcc = find_tool("nvcc")
    if nvcc is None:
        raise InputError(
            f"{path}: compiling CUDA needs nvcc, which is not installed (not on PATH, $CUDA_HOME/bin or "
            f"/usr/local/cuda/bin); install the CUDA toolkit, or compile it elsewhere with "
            f"`nvcc -ptx -arch={opts.arch} {os.path.basename(path)}` and give hypa the .ptx"
        )
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hypa-nvcc-") as d:
        out = os.path.join(d, "out.ptx")
        # -lineinfo adds only .loc/.file directives (the same instructions): `--by line` then
        # shows CUDA lines; -G implies it
        lineinfo = [] if any(f in ("-lineinfo", "--generate-line-info", "-G", "--device-debug")
                             for f in opts.nvcc_flags) else ["-lineinfo"]
        cmd = [nvcc, "-ptx", f"-arch={opts.arch}", *lineinfo, *opts.nvcc_flags, path, "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(out):
            msg = (p.stderr or p.stdout).strip()
            raise InputError(f"{path}: nvcc failed ({' '.join(cmd[1:])}):\n{msg}")
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
    return Source(path, text, "cu", arch=opts.arch, notes=[f"compiled with {' '.join(['nvcc', *cmd[1:-3]])}"])


def _arch_number(a: str | int | None) -> int | None:
    if a is None:
        return None
    if isinstance(a, int):
        return a
    m = re.search(r"(\d+)", a)
    return int(m.group(1)) if m else None


def _binary_sources(path: str, data: bytes, opts: InputOptions, kind: str) -> list[Source]:
    tool = find_tool("cuobjdump") if opts.cuobjdump is not False else None
    if opts.cuobjdump is True and tool is None:
        raise InputError(f"{path}: cuobjdump was asked for but is not installed")
    if tool is not None:
        ptxs, how = _cuobjdump_ptx(tool, path), "cuobjdump"
    else:
        ptxs, how = _own_ptx(path, data, kind)[0], "fatbin reader"
    linked = relocatable_ptx(path, data) if kind == "elf" else []
    if linked:  # -rdc=true: the objects' PTX, linked (cuobjdump -ptx does not list it)
        ptxs = [p for p in ptxs if p[1] not in {t for _a, t in _relocatable_objects(path, data)}] + linked
        how += "; the -rdc objects' PTX linked"
    if not ptxs:
        raise InputError(_no_ptx_message(path, data, kind, _own_ptx(path, data, kind)[1]))
    chosen = _choose(ptxs, opts.ptx_arch, path)
    out = []
    for n, (arch, text) in enumerate(chosen):
        member = f"sm_{arch} PTX" if len(chosen) == 1 else f"sm_{arch} PTX {n + 1}"
        out.append(Source(path, text, "fatbin" if kind == "fatbin" else "elf", member, f"sm_{arch}",
                          [f"PTX extracted with the {how}"]))
    return out


def _relocatable_objects(path: str, data: bytes) -> list[tuple[int, str]]:
    """(arch, PTX) of every relocatable object (``__nv_relfatbin``, ``nvcc -rdc=true``)."""
    out = []
    for blob in elf_fatbin_sections(data, ("__nv_relfatbin",)):
        for entries in fatbin_containers(blob, f"{path} (__nv_relfatbin)"):
            out.extend((e.arch, e.payload.rstrip(b"\0").decode("utf-8", errors="replace"))
                       for e in entries if e.kind == ENTRY_PTX)
    return out


def relocatable_ptx(path: str, data: bytes) -> list[tuple[int, str]]:
    """The PTX of a program built with separate compilation, linked as nvlink links its
    machine code (ptxdialect/link.py): one (arch, PTX) per architecture the objects share."""
    from hypa.ptxdialect.link import link_ptx

    objects = _relocatable_objects(path, data)
    out = []
    for arch in sorted({a for a, _t in objects}):
        texts = [t for a, t in objects if a == arch]
        named = [(f"{os.path.basename(path)}[object {i + 1}]", t) for i, t in enumerate(texts)]
        out.append((arch, link_ptx(named)))
    return out


def _cubin_arch(data: bytes) -> int | None:
    """The SM of a CUDA ELF (cubin) from its e_flags (bits 8-15 since ABI version 8, else 0-7)."""
    try:
        flags, = struct.unpack_from("<I", data, 0x30 if data[4] == 2 else 0x24)
    except struct.error:
        return None
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


def _no_ptx_message(path: str, data: bytes, kind: str, sass: list[int]) -> str:
    cubin = kind == "elf" and len(data) > 52 and struct.unpack_from("<H", data, 18)[0] == EM_CUDA
    if cubin and not sass:
        sass = [a for a in [_cubin_arch(data)] if a]
    if cubin or sass:
        arch = f"sm_{sass[0]}" if sass else "a GPU"
        what = "is a cubin" if cubin else "holds machine code (SASS) only"
        a = f"{sass[0]}" if sass else "90"
        return (f"{path} {what} for {arch} and no PTX; hypa analyses PTX: compile with `nvcc -ptx`, or embed PTX "
                f"with `-gencode arch=compute_{a},code=compute_{a}` (or `-arch=sm_{a}`, which embeds both)")
    if kind == "elf":
        return f"{path}: no embedded CUDA code (no .nv_fatbin section)"
    return f"{path}: no PTX found"


def arch_specific(ptx: str) -> bool:
    """Whether the PTX targets an architecture-specific variant (``.target sm_90a``): ``nvcc
    -arch=sm_90a`` embeds compute_90 and compute_90a PTX of the same kernels, and the GPU runs
    the sm_90a one (the compute_90 one may lack its wgmma, under ``__CUDA_ARCH_FEAT_SM90_ALL``)."""
    return re.search(r"^\s*\.target\s+sm_\d+a\b", ptx, re.MULTILINE) is not None


def _choose(ptxs: list[tuple[int, str]], want: str | None, path: str) -> list[tuple[int, str]]:
    """One PTX per kernel set: the requested architecture, else the newest that
    defines each kernel (a binary built for several architectures embeds the same
    kernels once per architecture; of one architecture, the arch-specific sm_90a first)."""
    if want is not None:
        n = _arch_number(want)
        hit = [(a, t) for a, t in ptxs if a == n]
        if not hit:
            have = ", ".join(sorted({f"compute_{a}" for a, _ in ptxs}))
            raise InputError(f"{path}: no PTX for {want} (it has {have})")
        return hit
    covered: set[str] = set()
    keep: list[int] = []
    for i in sorted(range(len(ptxs)), key=lambda i: (-ptxs[i][0], not arch_specific(ptxs[i][1]))):
        names = set(re.findall(r"\.entry\s+([\w$.]+)", ptxs[i][1]))
        if names and names <= covered:
            continue
        covered |= names
        keep.append(i)
    return [ptxs[i] for i in sorted(keep)]  # in the binary's own order


def _cuobjdump_ptx(tool: str, path: str) -> list[tuple[int, str]]:
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hypa-cuobjdump-") as d:
        p = subprocess.run([tool, "-xptx", "all", os.path.abspath(path)], cwd=d, capture_output=True, text=True)
        if p.returncode != 0:
            msg = (p.stderr or p.stdout).strip()
            if "does not contain device code" in msg or "no device code" in msg.lower():
                return []
            raise InputError(f"{path}: cuobjdump failed: {msg}")
        files = os.listdir(d)

        def number(n: str) -> tuple[int, str]:
            m = re.search(r"\.(\d+)\.sm_\d+\w*\.ptx$", n)
            return (int(m.group(1)) if m else 0, n)

        out = []
        for n in sorted((f for f in files if f.endswith(".ptx")), key=number):
            m = re.search(r"\.sm_(\d+)\w*\.ptx$", n)
            with open(os.path.join(d, n), encoding="utf-8", errors="replace") as f:
                out.append((int(m.group(1)) if m else 0, f.read().rstrip("\0")))
    return out


# -- our own reader -------------------------------------------------------------------------


def _own_ptx(path: str, data: bytes, kind: str) -> tuple[list[tuple[int, str]], list[int]]:
    """(PTX entries as (arch, text), architectures of SASS entries) of a binary."""
    if kind == "fatbin":
        blobs = [data]
    elif kind == "elf":
        blobs = elf_fatbin_sections(data)
        if not blobs:
            blobs = [data[i:] for i in _scan_magic(data)]
    else:  # an ar archive of objects: scan for fatbins
        blobs = [data[i:] for i in _scan_magic(data)]
    ptx: list[tuple[int, str]] = []
    sass: list[int] = []
    for blob in blobs:
        for e in read_fatbins(blob, path):
            if e.kind == ENTRY_PTX:
                ptx.append((e.arch, e.payload.rstrip(b"\0").decode("utf-8", errors="replace")))
            elif e.kind == ENTRY_ELF:
                sass.append(e.arch)
    return ptx, sass


def _scan_magic(data: bytes) -> list[int]:
    magic = struct.pack("<I", FATBIN_MAGIC)
    out = []
    i = data.find(magic)
    while i >= 0:
        if i + 16 <= len(data):
            _m, ver, hsize, _size = FATBIN_HEADER.unpack_from(data, i)
            if ver == 1 and hsize == 16:
                out.append(i)
        i = data.find(magic, i + 4)
    return out


def elf_fatbin_sections(data: bytes, sections: tuple[str, ...] = FATBIN_SECTIONS) -> list[bytes]:
    """Contents of the ``.nv_fatbin`` / ``__nv_relfatbin`` sections (or those named in ``sections``) of
    an ELF file (64- or 32-bit).  ``__nv_relfatbin`` holds the relocatable objects of a
    program built with ``-rdc=true`` (their PTX), ``.nv_fatbin`` the linked device code."""
    if data[:4] != ELF_MAGIC or len(data) < 52:
        return []
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    try:
        if is64:
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
        if shoff == 0 or shnum == 0:
            return []

        def section(i: int) -> tuple[int, int, int, int]:
            base = shoff + i * shentsize
            if is64:
                name, typ, _flags, _addr, off, size = struct.unpack_from(end + "IIQQQQ", data, base)
            else:
                name, typ, _flags, _addr, off, size = struct.unpack_from(end + "IIIIII", data, base)
            return name, typ, off, size

        _n, _t, str_off, str_size = section(shstrndx)
        names = data[str_off : str_off + str_size]
        out = []
        for i in range(shnum):
            name, typ, off, size = section(i)
            nm = names[name : names.find(b"\0", name)].decode("ascii", errors="replace")
            if nm in sections and typ != 8:  # not SHT_NOBITS
                out.append(data[off : off + size])
        return out
    except (struct.error, OverflowError):  # a header pointing outside the file
        return []


#: the largest embedded file hypa decompresses (checked before decompressing)
MAX_ENTRY_BYTES = 256 << 20


def read_fatbins(blob: bytes, where: str = "fatbin") -> list[FatbinEntry]:
    """Every entry of the fatbin containers laid one after another in ``blob``
    (a section may hold several, each 8-byte aligned)."""
    return [e for entries in fatbin_containers(blob, where) for e in entries]


def fatbin_containers(blob: bytes, where: str = "fatbin") -> list[list[FatbinEntry]]:
    """The entries of each fatbin container in ``blob``, container by container (in
    ``__nv_relfatbin`` a container is one relocatable object)."""
    containers: list[list[FatbinEntry]] = []
    pos = 0
    while pos + FATBIN_HEADER.size <= len(blob):
        magic, _ver, hsize, size = FATBIN_HEADER.unpack_from(blob, pos)
        if magic != FATBIN_MAGIC:
            if magic == 0:  # padding between containers
                pos += 8
                continue
            break
        if hsize < FATBIN_HEADER.size:  # a container that does not move past its own header
            raise InputError(f"{where}: corrupt fatbin: container at offset {pos} has a header of {hsize} bytes")
        containers.append(_read_entries(blob, pos + hsize, pos + hsize + size, where))
        pos = (pos + hsize + size + 7) // 8 * 8
    return containers


def _read_entries(blob: bytes, pos: int, end: int, where: str) -> list[FatbinEntry]:
    out = []
    end = min(end, len(blob))
    while pos + 0x40 <= end:
        kind, _ver, hsize, padded = struct.unpack_from("<HHIQ", blob, pos)
        if hsize < 0x40 or pos + hsize > end:
            break
        csize, = struct.unpack_from("<I", blob, pos + 0x10)
        arch, = struct.unpack_from("<I", blob, pos + 0x1C)
        flags, = struct.unpack_from("<Q", blob, pos + 0x28)
        usize, = struct.unpack_from("<Q", blob, pos + 0x38)
        if usize > MAX_ENTRY_BYTES:
            raise InputError(f"{where}: fatbin entry at offset {pos} announces {usize} bytes uncompressed "
                             f"(more than the {MAX_ENTRY_BYTES >> 20} MiB hypa reads)")
        raw = blob[pos + hsize : pos + hsize + padded]
        comp = None
        if flags & FLAG_LZ4:
            comp = "lz4"
            payload = lz4_block_decompress(raw[: csize or len(raw)], usize)
        elif flags & FLAG_ZSTD:
            comp = "zstd"
            payload = zstd_decompress(raw[: csize or len(raw)], usize, where)
        else:
            payload = raw
        out.append(FatbinEntry(kind, arch, flags, payload, comp))
        pos += hsize + padded
    return out


def _lz4_length(src: bytes, i: int, length: int, what: str) -> tuple[int, int]:
    """An LZ4 length from its 4 bits in the token (``length``) and, when they are all ones,
    the extra bytes at ``src[i:]`` (255 means more follow); returns it and the next index."""
    if length == 15:
        while True:
            if i >= len(src):
                raise InputError(f"corrupt LZ4 block: {what} length runs past the end")
            b = src[i]
            i += 1
            length += b
            if b != 255:
                break
    return length, i


def lz4_block_decompress(src: bytes, size: int | None = None) -> bytes:
    """Decompress one LZ4 block (the raw block format, no frame): a run of
    sequences, each a token (literal length << 4 | match length - 4), extra length
    bytes (255 means more follow), the literals, a 2-byte little-endian back
    offset and extra match length bytes; the last sequence has literals only."""
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit, i = _lz4_length(src, i, token >> 4, "literal")
        if i + lit > n:
            raise InputError("corrupt LZ4 block: literals run past the end")
        out += src[i : i + lit]
        i += lit
        if i >= n:
            break  # the last sequence: literals only
        if i + 2 > n:
            raise InputError("corrupt LZ4 block: truncated match offset")
        off = src[i] | (src[i + 1] << 8)
        i += 2
        mlen, i = _lz4_length(src, i, token & 15, "match")
        mlen += 4
        if off == 0 or off > len(out):
            raise InputError("corrupt LZ4 block: match offset outside the output")
        start = len(out) - off
        if off >= mlen:
            out += out[start : start + mlen]
        else:  # overlapping copy: the match repeats the last `off` bytes
            chunk = bytes(out[start:])
            reps, rest = divmod(mlen, off)
            out += chunk * reps + chunk[:rest]
        if size is not None and len(out) > size:
            raise InputError("corrupt LZ4 block: output larger than announced")
    if size and len(out) != size:
        raise InputError(f"corrupt LZ4 block: {len(out)} bytes decompressed, {size} announced")
    return bytes(out)


def zstd_decompress(src: bytes, size: int, where: str) -> bytes:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return zstd.decompress(src)
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{where}: its PTX is compressed with Zstandard (CUDA 13's default); install the `zstandard` package "
            f"(a dependency of hypa: pip install zstandard) or cuobjdump, or rebuild with `--compress-mode=none`"
        ) from None
    try:
        return zstandard.ZstdDecompressor().decompress(src, max_output_size=max(size, 1 << 20))
    except zstandard.ZstdError as e:
        raise InputError(f"{where}: its Zstandard-compressed PTX is damaged ({e})") from None
    except MemoryError:
        raise InputError(f"{where}: its Zstandard-compressed PTX does not fit in memory (a damaged size?)") from None
