"""Texture and surface instructions through launch specs (runtime/emulator/textures.py, docs/guide.md,
"Launch specification"): values computed by hand from the CUDA programming guide's texture fetching rules."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import HEADER, ROOT, build_cuda_program, gpu_recorded_run, nvcc, run_hypa
from hypa.ptxdialect import parse_ptx
from hypa.runtime.emulator.emulator import EmulationError, Emulator
from hypa.runtime.emulator.launch import (
    Launch,
    LaunchError,
    TextureSpec,
    launch_from_cli,
    launches_from_dict,
)

REGS = """
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<12>;
"""


def fetch_kernel(statement: str, results: str = "{%f1, %f2, %f3, %f4}", before: str = "") -> str:
    """``k(out, co, h)``: thread t loads four 32-bit coordinates ``co[4t .. 4t+3]`` into %r8..%r11
    (and the same bits into %f5..%f8), runs ``statement`` and stores ``results`` at ``out[4t]``."""
    return HEADER + before + f"""
.visible .entry k(.param .u64 out, .param .u64 co, .param .u64 h)
{{{REGS}
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [co];
    ld.param.u64 %rd5, [h];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.u64 %rd4, %rd2, %rd3;
    ld.global.v4.b32 {{%r8, %r9, %r10, %r11}}, [%rd4];
    mov.b32 %f5, %r8;
    mov.b32 %f6, %r9;
    mov.b32 %f7, %r10;
    mov.b32 %f8, %r11;
    {statement}
    add.u64 %rd6, %rd1, %rd3;
    st.global.v4.b32 [%rd6], {results};
    ret;
}}
"""


def run(ptx: str, coords, texels: np.ndarray, mode: str = "full", variables=None, args=None, **fields):
    """Run ``ptx`` with one thread per coordinate row over a texture of ``texels``; the results
    (threads x 4 words) as float32, and the raw words."""
    co = np.array(coords, np.float32 if np.asarray(coords).dtype.kind == "f" else np.int32).reshape(-1, 4)
    surface = fields.pop("surface", False)
    tex = TextureSpec("t", "px", surface, fields=fields)
    launch = Launch(kernel="k", grid=1, block=len(co), args=args or ["out", "co", "t"],
                    buffers={"out": np.zeros(4 * len(co), np.uint32), "co": co.view(np.uint32).ravel(), "px": texels},
                    textures={"t": tex}, variables=variables or {})
    res = Emulator(parse_ptx(ptx), mode=mode).run(launch)
    words = res.buffers["out"].reshape(-1, 4)
    return words.view(np.float32), words, res


TEX2D = fetch_kernel("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5, %f6}];")
F = np.float32


def test_point_and_linear_filtering_of_a_float_texture():
    px = np.arange(8, dtype=np.float32) * 10  # 4 x 2: row 0 = 0 10 20 30, row 1 = 40 50 60 70
    coords = [(0.0, 0.5, 0, 0), (1.75, 0.5, 0, 0), (3.9, 1.9, 0, 0), (2.0, 1.0, 0, 0), (-5, 7, 0, 0)]
    f, _w, _r = run(TEX2D, coords, px, format="float", width=4, height=2)
    assert f[:, 0].tolist() == [0, 10, 70, 60, 40]  # floor(x), floor(y), clamped
    assert f[0, 1:].tolist() == [0, 0, 0]  # a one-channel format reads (x, 0, 0, 0), as the H100 does
    f, _w, _r = run(TEX2D, coords, px, format="float", width=4, height=2, filter_mode="linear")
    # x - 0.5 = 1.25: texels 1 and 2, alpha 0.25; y - 0.5 = 0: row 0 alone
    assert f[1, 0] == F(12.5)
    # (2.0, 1.0): x - 0.5 = 1.5, y - 0.5 = 0.5: the mean of 10, 20, 50, 60
    assert f[3, 0] == F(35)
    assert f[0, 0] == 0 and f[4, 0] == 40  # clamped at the edges: (0, 0.5) and (-5, 7)
    # (3.9, 1.9): x - 0.5 = 3.4, texels 3 and 4 -> 3 (clamp), y likewise: 70
    assert f[2, 0] == 70


def test_linear_weights_have_eight_fractional_bits():
    px = np.array([0, 256], np.float32)
    # x - 0.5 = 1/3 (in f32): alpha = round(256/3) / 256 = 85/256 -> 85, not 85.33
    f, _w, _r = run(TEX2D, [(0.5 + 1 / 3, 0.5, 0, 0), (0.5 + 1 / 1024, 0.5, 0, 0), (0.5 + 3 / 1024, 0.5, 0, 0)], px,
                    format="float", width=2, height=1, filter_mode="linear")
    assert f[:, 0].tolist() == [85, 0, 1]  # 0.25/256 rounds to 0, 0.75/256 to 1/256


def test_uchar4_normalized_float_and_element_reads():
    px = np.array([[0, 255, 51, 128], [255, 0, 102, 64]], np.uint8).ravel()  # 2 x 1 texels
    f, _w, _r = run(TEX2D, [(0.5, 0.5, 0, 0), (1.0, 0.5, 0, 0)], px, format="uchar4", width=2, height=1,
                    read_mode="normalized_float", filter_mode="linear")
    assert f[0].tolist() == [0, 1, F(0.2), F(128) / F(255)]
    # halfway, in fixed point as the H100 filters 8-bit normalized data: S = 128 * (t0 + t1),
    # widened to 16 bits (S * 257 + 128) >> 8, read as a 16-bit normalized value:
    # 255 -> 32768, 51 + 102 -> 19661, 128 + 64 -> 24672 (of 65535)
    assert f[1].tolist() == [F(32768) / F(65535), F(32768) / F(65535), F(19661) / F(65535), F(24672) / F(65535)]
    ptx = fetch_kernel("tex.2d.v4.u32.f32 {%r4, %r5, %r6, %r7}, [%rd5, {%f5, %f6}];", "{%r4, %r5, %r6, %r7}")
    _f, w, _r = run(ptx, [(1.5, 0.0, 0, 0)], px, format="uchar4", width=2, height=1)
    assert w[0].tolist() == [255, 0, 102, 64]


def test_half_and_ushort_formats():
    px = np.array([1.5, -2.0, 65504.0, 0.0], np.float16)
    f, _w, _r = run(fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5}];"),
                    [(1.0, 0, 0, 0), (2.5, 0, 0, 0)], px, format="half", width=4, filter_mode="linear")
    assert f[:, 0].tolist() == [-0.25, 65504]  # (1.5 + -2) / 2; texel 2 alone
    px = np.array([0, 65535, 32768, 1], np.uint16)
    f, _w, _r = run(fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5}];"),
                    [(0.5, 0, 0, 0)], px, format="ushort2", width=2, read_mode="normalized_float")
    assert f[0].tolist() == [0, 1, 0, 0]  # (0, 65535/65535) and the missing z, w: 0


def test_signed_normalized_and_integer_formats():
    px = np.array([-128, -127, 127, 0], np.int8)
    f, _w, _r = run(fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5}];"),
                    [(0.5, 0, 0, 0), (1.5, 0, 0, 0), (2.5, 0, 0, 0)], px, format="char", width=4,
                    read_mode="normalized_float")
    assert f[:, 0].tolist() == [-1, -1, 1]  # -128/127 is clamped to -1
    ptx = fetch_kernel("tex.1d.v4.s32.f32 {%r4, %r5, %r6, %r7}, [%rd5, {%f5}];", "{%r4, %r5, %r6, %r7}")
    _f, w, _r = run(ptx, [(0.5, 0, 0, 0), (2.5, 0, 0, 0)], px, format="char", width=4)
    assert w.view(np.int32)[:, 0].tolist() == [-128, 127] and w[0, 3] == 0


def test_address_modes_with_normalized_coordinates():
    px = np.array([1, 2, 3, 4], np.float32)
    ptx = fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5}];")
    coords = [(1.125, 0, 0, 0), (-0.125, 0, 0, 0), (1.375, 0, 0, 0), (0.5, 0, 0, 0)]
    got = {}
    for mode in ("wrap", "clamp", "mirror", "border"):
        f, _w, _r = run(ptx, coords, px, format="float", width=4, address_mode=mode, normalized_coords=True)
        got[mode] = f[:, 0].tolist()
    # x * 4 = 4.5, -0.5, 5.5, 2.0 -> texel 4, -1, 5, 2
    assert got["wrap"] == [1, 4, 2, 3]
    assert got["clamp"] == [4, 1, 4, 3]
    assert got["mirror"] == [4, 1, 3, 3]  # 4 -> 3, -1 -> 0, 5 -> 2
    assert got["border"] == [0, 0, 0, 3]
    # wrap without normalized coordinates clamps (as CUDA does)
    f, _w, _r = run(ptx, [(5.5, 0, 0, 0)], px, format="float", width=4, address_mode="wrap")
    assert f[0, 0] == 4


def test_linear_filtering_wraps_per_texel():
    px = np.array([0, 100, 200, 300], np.float32)
    f, _w, _r = run(fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5}];"),
                    [(0.0, 0, 0, 0)], px, format="float", width=4, address_mode="wrap", normalized_coords=True,
                    filter_mode="linear")
    assert f[0, 0] == 150  # x*4 - 0.5 = -0.5: texels 3 and 0 (wrapped), alpha 0.5


def test_integer_coordinates_layers_and_3d():
    px = np.arange(24, dtype=np.float32)  # 3 layers of 4 x 2 / or 4 x 2 x 3
    ptx = fetch_kernel("tex.a2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%r8, %f6, %f7, %f8}];")
    co = np.zeros((3, 4), np.uint32)
    co[:, 0] = [0, 2, 9]  # layer (clamped to 2)
    co[:, 1] = np.array([1.5, 3.5, 0.5], np.float32).view(np.uint32)
    co[:, 2] = np.array([1.5, 0.5, 0.5], np.float32).view(np.uint32)
    f, _w, _r = run(ptx, co.view(np.float32), px, format="float", width=4, height=2, layers=3)
    assert f[:, 0].tolist() == [5, 19, 16]
    ptx = fetch_kernel("tex.3d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd5, {%r8, %r9, %r10, %r11}];")
    co = np.array([(1, 1, 2, 0), (3, 0, 1, 0), (7, -1, 9, 0)], np.int32)
    f, _w, _r = run(ptx, co, px, format="float", width=4, height=2, depth=3)
    assert f[:, 0].tolist() == [21, 11, 19]


def test_tld4_gathers_one_component_of_the_four_texels():
    px = (np.arange(8, dtype=np.float32)[:, None] * [1, -1]).ravel()  # float2 texels (v, -v), 4 x 2
    ptx = fetch_kernel("tld4.g.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5, %f6}];")
    f, _w, _r = run(ptx, [(1.25, 1.0, 0, 0)], px.astype(np.float32), format="float2", width=4, height=2)
    # x - 0.5 = 0.75 -> texels 0, 1; y - 0.5 = 0.5 -> rows 0, 1: (x0,y1) (x1,y1) (x1,y0) (x0,y0)
    assert f[0].tolist() == [-4, -5, -1, 0]


def test_cube_map_faces():
    px = (np.arange(6)[:, None] * 10 + np.arange(4)).astype(np.float32).ravel()  # 6 faces of 2x2: face*10 + texel
    ptx = fetch_kernel("tex.cube.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5, %f6, %f7, %f8}];")
    coords = [(1, 0, 0, 0), (-1, 0.2, 0.3, 0), (0.1, -0.9, 0.5, 0), (0.2, 0.1, -0.8, 0)]
    f, _w, _r = run(ptx, coords, px, format="float", width=2, height=2, layers=6, cubemap=True)
    # +x: s = (-z/|x| + 1)/2 = 0.5, t = (-y/|x| + 1)/2 = 0.5 -> texel (1, 1); -x: s = 0.65, t = 0.4 -> (1, 0);
    # -y: s = (x/|y| + 1)/2 = 0.56, t = (-z/|y| + 1)/2 = 0.22 -> (1, 0); -z: s = 0.375, t = 0.4375 -> (0, 0)
    assert f[:, 0].tolist() == [3, 11, 31, 50]
    with pytest.raises(EmulationError, match="tex.2d reads texture 't', which is a cube map"):
        run(TEX2D, coords, px, format="float", width=2, height=2, layers=6, cubemap=True)


def test_txq_and_istypep():
    px = np.zeros(24, np.float32)
    ptx = fetch_kernel("txq.width.b32 %r4, [%rd5];\n    txq.height.b32 %r5, [%rd5];\n"
                       "    txq.normalized_coords.b32 %r6, [%rd5];\n    istypep.texref %p1, %rd5;\n"
                       "    selp.u32 %r7, 7, 9, %p1;", "{%r4, %r5, %r6, %r7}")
    _f, w, _r = run(ptx, [(0, 0, 0, 0)], px, format="float2", width=3, height=4, normalized_coords=True)
    assert w[0].tolist() == [3, 4, 1, 7]


def test_texref_variable_names_a_texture():
    px = np.arange(4, dtype=np.float32)
    ptx = fetch_kernel("tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [gt, {%f5}];", before=".global .texref gt;\n")
    for mode in ("full", "slice"):
        f, _w, _r = run(ptx, [(2.5, 0, 0, 0)], px, mode=mode, format="float", width=4, variables={"gt": "t"},
                        args=["out", "co", 0])
        if mode == "full":
            assert f[0, 0] == 2


def test_a_handle_that_names_no_texture_stops_the_launch():
    px = np.zeros(4, np.float32)
    with pytest.raises(EmulationError, match=r"tex reads handle 0x0, which names no texture object at kernel k, "
                                             r"CTA \(0, 0, 0\), thread \(0, 0, 0\): tex.2d"):
        run(TEX2D, [(0, 0, 0, 0)], px, format="float", width=4, height=1, args=["out", "co", 0])


# -- surfaces -------------------------------------------------------------------------------

SURF = HEADER + f"""
.visible .entry k(.param .u64 out, .param .u64 co, .param .u64 h)
{{{REGS}
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd5, [h];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    add.u32 %r3, %r1, 100;
    sust.b.2d.b32.MODE [%rd5, {{%r2, 1}}], {{%r3}};
    sub.s32 %r4, %r2, 4;
    suld.b.2d.v2.b32.MODE {{%r5, %r6}}, [%rd5, {{%r4, 1}}];
    sured.b.add.2d.u32.MODE [%rd5, {{%r2, 0}}], %r3;
    mul.wide.u32 %rd3, %r1, 8;
    add.u64 %rd6, %rd1, %rd3;
    st.global.v2.b32 [%rd6], {{%r5, %r6}};
    ret;
}}
"""


def surface_run(mode: str, emu: str = "full", threads: int = 4):
    launch = Launch(kernel="k", grid=1, block=threads, args=["out", 0, "s"],
                    buffers={"out": np.zeros(2 * threads, np.uint32), "px": np.arange(8, dtype=np.uint32)},
                    textures={"s": TextureSpec("s", "px", True, fields={"format": "uint", "width": 4, "height": 2})})
    return Emulator(parse_ptx(SURF.replace("MODE", mode)), mode=emu).run(launch)


def test_surface_load_store_and_reduction_in_range_and_zero_mode():
    r = surface_run("zero")
    # row 1 = 100..103 after the stores; each thread reads the two words at byte x - 4
    assert r.buffers["out"].reshape(4, 2).tolist() == [[0, 0], [100, 101], [101, 102], [102, 103]]
    assert r.buffers["px"].tolist() == [100, 102, 104, 106, 100, 101, 102, 103]


def test_surface_clamp_mode_clamps_the_byte_coordinate():
    r = surface_run("clamp")
    # thread 0 reads at byte -4: clamped to 0; thread 3 reads bytes 8..15 (in range)
    assert r.buffers["out"].reshape(4, 2).tolist() == [[100, 101], [100, 101], [101, 102], [102, 103]]


@pytest.mark.parametrize("emu", ["full", "slice"])
def test_surface_trap_mode_stops_the_launch_in_full_and_slice_mode(emu):
    with pytest.raises(EmulationError, match=r"suld.2d.trap out of range: coordinates \(-4, 1\) \(x in bytes\) "
                                             r"outside surface 's' \(4x2 uint\) at kernel k, CTA \(0, 0, 0\), "
                                             r"thread \(0, 0, 0\)"):
        surface_run("trap", emu)


def test_formatted_surface_store():
    ptx = HEADER + f"""
.visible .entry k(.param .u64 h)
{{{REGS}
    ld.param.u64 %rd5, [h];
    mov.u32 %r1, %tid.x;
    mov.b32 %r2, 0f3FC00000;
    cvt.rn.f32.u32 %f1, %r1;
    mov.b32 %r3, %f1;
    sust.p.1d.v2.b32.trap [%rd5, {{%r1}}], {{%r2, %r3}};
    ret;
}}
"""
    launch = Launch(kernel="k", grid=1, block=2, args=["s"], buffers={"px": np.zeros(4, np.uint16)},
                    textures={"s": TextureSpec("s", "px", True, fields={"format": "half2", "width": 2})})
    r = Emulator(parse_ptx(ptx), mode="full").run(launch)
    # x is in texels for .p; (1.5, t) converted to half
    assert r.buffers["px"].view(np.float16).tolist() == [1.5, 0.0, 1.5, 1.0]


# -- launch specs ------------------------------------------------------------------------------

def test_cli_and_toml_texture_specs():
    launch = launch_from_cli("grid=1 block=4 args=out,co,img buffer.out=uint32:16 buffer.co=float32:16 "
                             "buffer.px=float32:8:arange texture.img=px:float:4x2:address=wrap,clamp:filter=linear"
                             ":normalized surface.s=px:uint:4x2")
    d = launch.textures["img"].desc(32)
    assert (d.address_mode, d.filter_mode, d.normalized_coords, d.dims) == (("wrap", "clamp", "clamp"), "linear",
                                                                             True, 2)
    assert launch.textures["s"].surface
    launches = launches_from_dict({
        "launch": [{"kernel": "k", "grid": 1, "block": 4, "args": ["out", "co", "img"]}],
        "buffers": {"out": {"dtype": "uint32", "count": 16}, "co": {"dtype": "float32", "count": 16},
                    "px": {"dtype": "uint8", "count": 32}},
        "textures": {"img": {"buffer": "px", "format": "uchar4", "width": 4, "height": 2,
                             "read_mode": "normalized_float", "address_mode": ["border", "mirror"]}},
    })
    assert set(launches[0].buffers) == {"out", "co", "px"} and set(launches[0].textures) == {"img"}


@pytest.mark.parametrize("spec, message", [
    ("texture.t=px:float3:4", "texture 't': unknown format 'float3'"),
    ("texture.t=px:float:4:filter=cubic", "texture 't': filter_mode must be point or linear, not 'cubic'"),
    ("texture.t=px:float:4:address=repeat", "address_mode must be one to three of wrap, clamp, mirror, border"),
    ("texture.t=px:uint:4:filter=linear", "linear filtering returns floats"),
    ("texture.t=px:float:4:read=normalized_float", "read_mode normalized_float needs an 8- or 16-bit integer"),
    ("texture.t=px:float:4:shiny", "texture 't': unknown option 'shiny'"),
    ("texture.t=px:float:2x1:layers=6:cubemap", "a cube map has square faces"),
    ("texture.t=px:float:4xq", "extent '4xq' is not WIDTH"),
    ("texture.t=nope:float:4", "buffer 'nope' is not given"),
    ("surface.t=px:float:4:filter=linear", "surface 't': unknown option 'filter=linear'"),
])
def test_bad_texture_specs_are_clear_messages(spec, message):
    with pytest.raises(LaunchError, match=message.replace("(", r"\(")):
        launch_from_cli(f"grid=1 block=1 args=t buffer.px=float32:8 {spec}")


def test_a_texture_larger_than_its_buffer_is_refused():
    ptx = fetch_kernel("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5, %f6}];")
    with pytest.raises(LaunchError, match=r"texture 't': 4x4 float texels need 64 bytes, the memory holds 32"):
        run(ptx, [(0, 0, 0, 0)], np.zeros(8, np.float32), format="float", width=4, height=4)
    with pytest.raises(LaunchError, match=r"unknown keys shiny"):
        launches_from_dict({"launch": [{"grid": 1, "block": 1}], "buffers": {"px": {"dtype": "uint8", "count": 4}},
                            "textures": {"t": {"buffer": "px", "format": "uchar", "width": 4, "shiny": 1}}})


# -- real programs under hypa run (tests/cuda_programs/isa) ----------------------------------

ISA_PROGRAMS = ROOT / "tests" / "cuda_programs" / "isa"


@pytest.fixture(scope="module")
def isa_runs(tmp_path_factory):
    """texture_filtering, surface_rw and tex_query built (nvcc -cudart shared) and run under hypa run."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    d = tmp_path_factory.mktemp("isa")
    out = {}
    for name in ("texture_filtering", "surface_rw", "tex_query"):
        p = nvcc(ISA_PROGRAMS / f"{name}.cu", d / name)
        assert p.returncode == 0, p.stderr[-1000:]
        out[name] = run_hypa("run", "--", str(d / name), timeout=600)
    return out


def test_racecheck_sample_finds_no_hazard(isa_runs):
    """racecheck's sample (on by default under hypa run) reports nothing for these programs."""
    for name, r in isa_runs.items():
        assert "racecheck" not in r.stderr, (name, r.stderr)


def _matches_gpu(name: str, stdout: str) -> None:
    rec = gpu_recorded_run(name)
    if rec is not None:
        assert stdout == rec["stdout"], f"{name}: hypa run's output differs from the GPU's"


def test_texture_filtering_program(isa_runs):
    r = isa_runs["texture_filtering"]
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    # 4x3 float texture (1 2 4 8 / 16 32 64 128 / 0.25 -3 1000 0.1); (0.5, 0.5) unnormalized is (2, 1.5):
    # x - 0.5 = 1.5 -> texels 1, 2 (alpha 1/2), y - 0.5 = 1 -> row 1: (32 + 64) / 2 = 48
    assert "float clamp linear unnorm 3: 42400000 00000000 00000000 00000000" in lines
    # normalized (0.9, 0.99) -> texel (3, 2) = 0.1 whatever the mode; border zero outside: (1.2, 0.4) -> 0
    assert "float wrap point norm 5: 3dcccccd 00000000 00000000 00000000" in lines
    assert "float border point norm 7: 00000000 00000000 00000000 00000000" in lines
    # wrap: (1.2, 0.4) -> (0.2 * 4, 0.4 * 3) = texel (0, 1) = 16
    assert "float wrap point norm 7: 41800000 00000000 00000000 00000000" in lines
    # uchar4 (0, 255, 51, 128) at texel (0, 0), normalized: 0, 1, 0.2, 128/255
    assert "uchar4 clamp point 0: 00000000 3f800000 3e4ccccd 3f008081" in lines
    assert "uchar4 element clamp 0: 0 255 51 128" in lines
    # a linear-memory texture of 10 floats: index -2 and 10 and beyond read zero
    assert "linear fetch -2: 00000000" in lines and "linear fetch 7: 43000000" in lines
    assert "linear fetch 10: 00000000" in lines
    # layer 0 of 4x2 (i*i/2): (0.5, 0.5) -> the mean of 0.5, 2, 12.5, 18 = 8.25
    assert "layered 3: 41040000" in lines
    assert lines[-1] == "done"
    # against the H100, bit for bit, every line: linear filtering with 8-bit corner weights
    # (the all-upper corner's the rounded product of its axes', the others by difference),
    # normalized 8-bit data filtered in fixed point and read as 16-bit normalized, cube faces
    # whose ties go to z, then y (runtime/emulator/textures.py)
    _matches_gpu("texture_filtering", r.stdout)


def test_surface_program(isa_runs):
    r = isa_runs["surface_rw"]
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert "thread 0: 0 2006 fd040302 403" in lines  # zero mode reads 0 at x = -4; clamp reads (3, 2)
    assert "texel 8: 2000" in lines and "texel 11: 2005" in lines  # clamped writes
    assert "uchar4 texel 0: 2 3 4 253" in lines
    assert lines[-1] == "trap store: an error"
    assert "sust.2d.trap out of range: coordinates (16, 0) (x in bytes) outside surface" in r.stderr
    _matches_gpu("surface_rw", r.stdout)


def test_tex_query_program(isa_runs):
    r = isa_runs["tex_query"]
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("case 0 (0 0 cudaSuccess): width 7 height 5 depth 1 type 0x10de order 0x10b0 normalized 1 filter 1 "
                               "modes 1 0 layers 0; channel desc 32 0 0 0 kind 2")
    assert "layers 4" in lines[3] and "channel desc 16 16 0 0 kind 0" in lines[2]
    # the H100 (CUDA 13.0 ptxas, recorded in isa_native.json) answers 0 to every txq of a texture
    # object; hypa answers what the PTX ISA defines: an open difference (docs/validation.md, "Newer instructions on an H100")
    rec = gpu_recorded_run("tex_query")
    if rec is not None:
        assert all("width 0 height 0 depth 0" in g for g in rec["stdout"].splitlines())


def test_surface_writes_from_forked_workers_reach_the_buffer():
    """-j: the surface's buffer moves into shared memory; the callback finds it there."""
    ptx = HEADER + f"""
.visible .entry k(.param .u64 h)
{{{REGS}
    ld.param.u64 %rd5, [h];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r2, 32, %r1;
    shl.b32 %r4, %r3, 2;
    add.u32 %r5, %r3, 7;
    sust.b.1d.b32.trap [%rd5, {{%r4}}], {{%r5}};
    ret;
}}
"""
    for jobs in (1, 2):
        launch = Launch(kernel="k", grid=4, block=32, args=["s"], buffers={"px": np.zeros(128, np.uint32)},
                        textures={"s": TextureSpec("s", "px", True, fields={"format": "uint", "width": 128})})
        r = Emulator(parse_ptx(ptx), mode="full").run(launch, jobs=jobs)
        assert r.buffers["px"].tolist() == list(range(7, 135)), jobs


def test_capture_replays_texture_launches_in_full_mode(tmp_path):
    """--capture writes each texture object as a [textures.NAME] table over its texels: the
    launches replay in full mode (the texture instructions run) with the same counts."""
    import json

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    exe = tmp_path / "tex_query"
    assert nvcc(ISA_PROGRAMS / "tex_query.cu", exe).returncode == 0
    cap = tmp_path / "cap"
    r = run_hypa("run", "--capture", str(cap), "--format", "json", "-o", str(tmp_path / "run.json"), "--", str(exe))
    assert r.returncode == 0, r.stderr
    toml = (cap / "launches.toml").read_text()
    assert toml.count("[textures.") == 4 and 'format = "short2"' in toml and "layers = 4" in toml
    p = run_hypa("profile", str(cap), "--mode", "full", "--format", "json")
    assert p.returncode == 0, p.stderr
    replay = [d["thread_inst_executed"] for d in json.loads(p.stdout)]
    ran = [d["thread_inst_executed"] for d in json.loads((tmp_path / "run.json").read_text())]
    assert replay == ran and len(ran) == 4


def test_texel_offsets_are_refused_with_a_message():
    ptx = fetch_kernel("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd5, {%f5, %f6}], {%r8, %r9};")
    with pytest.raises(Exception, match=r"tex.2d.v4.f32.f32: texel offsets and depth comparison are not emulated"):
        run(ptx, [(0, 0, 0, 0)], np.zeros(4, np.float32), format="float", width=2, height=2)


FREED = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(cudaTextureObject_t t, float *out) { out[0] = tex1Dfetch<float>(t, 0); }
int main() {
    float *lin, *out;
    cudaMalloc(&lin, 64);
    cudaMalloc(&out, 4);
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeLinear;
    res.res.linear.devPtr = lin;
    res.res.linear.desc = cudaCreateChannelDesc<float>();
    res.res.linear.sizeInBytes = 64;
    cudaTextureDesc td = {};
    cudaTextureObject_t t;
    printf("create: %d\n", (int)cudaCreateTextureObject(&t, &res, &td, nullptr));
    k<<<1, 1>>>(t, out);
    printf("before free: %d\n", (int)cudaDeviceSynchronize());
    cudaFree(lin);
    k<<<1, 1>>>(t, out);
    printf("after free: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
"""


def test_texture_over_freed_memory_stops_the_kernel(tmp_path):
    exe = build_cuda_program(tmp_path, "freed", FREED)
    r = run_hypa("run", "--", str(exe))
    assert r.stdout.splitlines() == ["create: 0", "before free: 0", "after free: cudaErrorIllegalAddress"], r.stderr
    assert "tex reads texture '0x1', whose memory was freed (cudaFree/cudaFreeArray)" in r.stderr
