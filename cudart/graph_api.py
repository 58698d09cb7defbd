"""CUDA graphs and memory pools (``hypa run``): stream capture, the explicit graph API, graph
launches, and the pool calls programs built on ``cudaMallocAsync`` make.

A graph is a list of nodes in the order they were added, each with the nodes it depends on;
dependencies always name earlier nodes, so that order is a topological one and a launch runs
the nodes in it (hypa runs work to the end at once, so every order that respects the edges
gives the same results).  An instantiated graph (``cudaGraphExec_t``) is a copy: later changes
to the graph do not reach it, ``cudaGraphExecKernelNodeSetParams`` does.

Work recorded by stream capture runs when the graph is launched, not when it is recorded: a
kernel node copies its arguments when it is made (``kernelParams`` point to the caller's
variables), a copy node reads and writes memory when it runs.  Calls that would wait for a
capturing stream fail with ``cudaErrorStreamCaptureUnsupported`` and invalidate the capture,
as CUDA's do.  The structures are read with the layouts of CUDA 12/13's ``driver_types.h``.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import errors as E
from .api import SYNCHRONIZING

#: cudaStreamCaptureStatus
_NONE, _ACTIVE, _INVALIDATED = 0, 1, 2
#: sizeof(cudaMemcpy3DParms): two (array, cudaPos, cudaPitchedPtr), cudaExtent, kind (padded)
_MEMCPY3D_BYTES = 160
#: the calls that take work onto a stream (their ``stream`` argument may be capturing)
CAPTURABLE = frozenset({
    "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpy3DAsync",
    "cudaMemsetAsync", "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync", "cudaLaunchHostFunc",
    "cudaMemcpy2DToArrayAsync", "cudaGraphLaunch",
})
#: not allowed while a stream captures: the calls that wait for the device, and work on the
#: legacy stream, which waits for a capturing (blocking) stream
WAITING = SYNCHRONIZING | {"cudaMemset", "cudaMemset2D"}


@dataclass
class Node:
    """One node: ``kind`` kernel, call (a runtime call re-made at launch time), memset,
    host, empty or graph (a child graph); ``deps``: the nodes it waits for."""

    kind: str
    deps: list[int] = field(default_factory=list)  # node handles
    func: int = 0
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    shared: int = 0
    args: list[bytes] = field(default_factory=list)
    call: str = ""
    vals: tuple = ()
    keep: Any = None  # a struct the call reads, copied when the node was made
    child: int = 0  # graph handle of a child graph node


@dataclass
class Graph:
    nodes: list[int] = field(default_factory=list)  # node handles, in the order added


@dataclass
class StreamCapture:
    """One stream capture: its graph, the streams in it and each one's last node."""

    graph: int
    origin: int
    mode: int
    tails: dict[int, list[int]] = field(default_factory=dict)  # stream -> the nodes new work depends on
    status: int = _ACTIVE


def _read_dim3(addr: int) -> tuple[int, int, int]:
    return struct.unpack("<III", ctypes.string_at(addr, 12))


class GraphRuntime:
    """The graph and memory-pool calls of ``HostRuntime`` (cudart/host.py)."""

    def _graph_state(self) -> None:
        """The graph state (``HostRuntime.__init__`` makes it)."""
        self.graphs: dict[int, Graph] = {}
        self.graph_nodes: dict[int, Node] = {}
        self.graph_execs: dict[int, list[tuple[int, Node]]] = {}  # exec -> (node handle, node)
        self.stream_captures: dict[int, StreamCapture] = {}  # capturing stream -> its capture
        self.event_captures: dict[int, tuple[StreamCapture, list[int]]] = {}
        self.capture_mode = 0
        self.mem_pools: dict[int, dict[int, int]] = {}

    def _handle(self, kind: str) -> int:
        return self.memory.allocate(8, kind).start

    # -- nodes -------------------------------------------------------------------------------

    def _add(self, graph: int, node: Node) -> int:
        h = self._handle("graph node")
        self.graph_nodes[h] = node
        self.graphs[graph].nodes.append(h)
        return h

    def _deps(self, graph: int, deps: int, n: int) -> list[int] | None:
        hs = [ctypes.c_void_p.from_address(deps + 8 * i).value or 0 for i in range(n)] if n else []
        nodes = self.graphs[graph].nodes
        return hs if all(h in nodes for h in hs) else None

    def _kernel_node(self, params: int) -> Node | int:
        """A kernel node from ``cudaKernelNodeParams`` (func, gridDim, blockDim, sharedMemBytes,
        kernelParams, extra), its arguments copied now."""
        func = ctypes.c_void_p.from_address(params).value or 0
        grid, block = _read_dim3(params + 8), _read_dim3(params + 20)
        shared = ctypes.c_uint.from_address(params + 32).value
        kparams = ctypes.c_void_p.from_address(params + 40).value or 0
        prog = self._program(func)
        if prog is None:
            return E.cudaErrorInvalidDeviceFunction
        if not kparams and prog.params:
            return E.cudaErrorInvalidValue  # arguments only through ``extra``: not read
        return Node("kernel", func=func, grid=grid, block=block, shared=shared,
                    args=self._copy_args(prog, kparams))

    def _copy_args(self, prog, kparams: int) -> list[bytes]:
        out = []
        for i, (_n, _t, _off, size) in enumerate(prog.params):
            p = ctypes.c_void_p.from_address(kparams + 8 * i).value or 0
            out.append(ctypes.string_at(p, size) if size else b"")
        return out

    def _new_node(self, pGraphNode: int, graph: int, deps: int, n: int, node: Node | int) -> int:
        if graph not in self.graphs:
            return E.cudaErrorInvalidValue
        if isinstance(node, int):
            return node
        d = self._deps(graph, deps, n)
        if d is None:
            return E.cudaErrorInvalidValue
        node.deps = d
        ctypes.c_void_p.from_address(pGraphNode).value = self._add(graph, node)
        return 0

    def cudaGraphCreate(self, pGraph, flags):
        h = self._handle("graph")
        self.graphs[h] = Graph()
        ctypes.c_void_p.from_address(pGraph).value = h
        return 0

    def cudaGraphDestroy(self, graph):
        g = self.graphs.pop(graph, None)
        if g is None:
            return E.cudaErrorInvalidValue
        for h in g.nodes:
            self.graph_nodes.pop(h, None)
        return 0

    def cudaGraphAddKernelNode(self, pGraphNode, graph, pDependencies, numDependencies, pNodeParams):
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, self._kernel_node(pNodeParams))

    def cudaGraphKernelNodeSetParams(self, node, pNodeParams):
        old = self.graph_nodes.get(node)
        new = self._kernel_node(pNodeParams)
        if old is None or old.kind != "kernel":
            return E.cudaErrorInvalidValue
        if isinstance(new, int):
            return new
        self.graph_nodes[node] = replace(new, deps=old.deps)
        return 0

    def cudaGraphAddMemcpyNode(self, pGraphNode, graph, pDependencies, numDependencies, pCopyParams):
        keep = ctypes.create_string_buffer(ctypes.string_at(pCopyParams, _MEMCPY3D_BYTES), _MEMCPY3D_BYTES)
        node = Node("call", call="cudaMemcpy3D", vals=(ctypes.addressof(keep),), keep=keep)
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, node)

    def cudaGraphAddMemcpyNode1D(self, pGraphNode, graph, pDependencies, numDependencies, dst, src, count, kind):
        node = Node("call", call="cudaMemcpy", vals=(dst, src, count, kind))
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, node)

    def cudaGraphAddMemsetNode(self, pGraphNode, graph, pDependencies, numDependencies, pMemsetParams):
        # cudaMemsetParams: dst, pitch, value (uint), elementSize (uint), width, height
        dst, pitch, value, esize, width, height = struct.unpack("<QQIIQQ", ctypes.string_at(pMemsetParams, 40))
        if esize not in (1, 2, 4):
            return E.cudaErrorInvalidValue
        node = Node("memset", vals=(dst, pitch, value, esize, width, max(height, 1)))
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, node)

    def cudaGraphAddHostNode(self, pGraphNode, graph, pDependencies, numDependencies, pNodeParams):
        fn, data = struct.unpack("<QQ", ctypes.string_at(pNodeParams, 16))
        node = Node("call", call="cudaLaunchHostFunc", vals=(0, fn, data))
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, node)

    def cudaGraphAddEmptyNode(self, pGraphNode, graph, pDependencies, numDependencies):
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, Node("empty"))

    def cudaGraphAddChildGraphNode(self, pGraphNode, graph, pDependencies, numDependencies, childGraph):
        if childGraph not in self.graphs:
            return E.cudaErrorInvalidValue
        # the child is copied: later changes to it do not reach this node (as CUDA clones it)
        copy = self._clone(childGraph)
        return self._new_node(pGraphNode, graph, pDependencies, numDependencies, Node("graph", child=copy))

    def cudaGraphAddDependencies(self, graph, frm, to, edgeData, numDependencies):
        g = self.graphs.get(graph)
        if g is None:
            return E.cudaErrorInvalidValue
        pairs = [(ctypes.c_void_p.from_address(frm + 8 * i).value or 0, ctypes.c_void_p.from_address(to + 8 * i).value or 0)
                 for i in range(numDependencies)]
        if any(a not in g.nodes or b not in g.nodes for a, b in pairs):
            return E.cudaErrorInvalidValue
        for a, b in pairs:
            if a not in self.graph_nodes[b].deps:
                self.graph_nodes[b].deps.append(a)
        return 0

    def _write_nodes(self, hs: list[int], out: int, num: int) -> int:
        if out:  # at most *num of them; *num says how many were written
            n = ctypes.c_size_t.from_address(num).value
            for i, h in enumerate(hs[:n]):
                ctypes.c_void_p.from_address(out + 8 * i).value = h
            ctypes.c_size_t.from_address(num).value = min(n, len(hs))
        else:
            ctypes.c_size_t.from_address(num).value = len(hs)
        return 0

    def cudaGraphGetNodes(self, graph, nodes, numNodes):
        g = self.graphs.get(graph)
        return E.cudaErrorInvalidValue if g is None else self._write_nodes(g.nodes, nodes, numNodes)

    def cudaGraphGetRootNodes(self, graph, pRootNodes, pNumRootNodes):
        g = self.graphs.get(graph)
        if g is None:
            return E.cudaErrorInvalidValue
        return self._write_nodes([h for h in g.nodes if not self.graph_nodes[h].deps], pRootNodes, pNumRootNodes)

    def _clone(self, graph: int) -> int:
        h = self._handle("graph")
        self.graphs[h] = Graph()
        renamed: dict[int, int] = {}
        for old in self.graphs[graph].nodes:
            n = self.graph_nodes[old]
            renamed[old] = self._add(h, replace(n, deps=[renamed[d] for d in n.deps]))
        return h

    def cudaGraphClone(self, pGraphClone, originalGraph):
        if originalGraph not in self.graphs:
            return E.cudaErrorInvalidValue
        ctypes.c_void_p.from_address(pGraphClone).value = self._clone(originalGraph)
        return 0

    # -- executable graphs ---------------------------------------------------------------------

    def cudaGraphInstantiate(self, pGraphExec, graph, flags):
        g = self.graphs.get(graph)
        if g is None:
            return E.cudaErrorInvalidValue
        h = self._handle("graph exec")
        # a copy, node handles kept so cudaGraphExecKernelNodeSetParams finds them
        self.graph_execs[h] = [(n, replace(self.graph_nodes[n])) for n in g.nodes]
        ctypes.c_void_p.from_address(pGraphExec).value = h
        return 0

    def cudaGraphInstantiateWithFlags(self, pGraphExec, graph, flags):
        return self.cudaGraphInstantiate(pGraphExec, graph, flags)

    def cudaGraphExecKernelNodeSetParams(self, hGraphExec, node, pNodeParams):
        ex = self.graph_execs.get(hGraphExec)
        new = self._kernel_node(pNodeParams)
        if ex is None:
            return E.cudaErrorInvalidValue
        if isinstance(new, int):
            return new
        for i, (h, old) in enumerate(ex):
            if h == node and old.kind == "kernel":
                ex[i] = (h, replace(new, deps=old.deps))
                return 0
        return E.cudaErrorInvalidValue

    def cudaGraphUpload(self, graphExec, stream):
        return 0 if graphExec in self.graph_execs else E.cudaErrorInvalidValue

    def cudaGraphLaunch(self, graphExec, stream):
        ex = self.graph_execs.get(graphExec)
        if ex is None:
            return E.cudaErrorInvalidValue
        r = self._stream_ok(stream)
        if r:
            return r
        for _h, node in ex:
            r = self._run_node(node)
            if r:
                return r
        return 0

    def cudaGraphExecDestroy(self, graphExec):
        return 0 if self.graph_execs.pop(graphExec, None) is not None else E.cudaErrorInvalidValue

    def _run_node(self, node: Node) -> int:
        if node.kind == "kernel":
            bufs = [ctypes.create_string_buffer(a, max(len(a), 1)) for a in node.args]
            argv = (ctypes.c_void_p * max(len(bufs), 1))(*[ctypes.addressof(b) for b in bufs])
            return self.cudaLaunchKernel(node.func, node.grid, node.block, ctypes.addressof(argv), node.shared, 0)
        if node.kind == "call":
            return getattr(self, node.call)(*node.vals)
        if node.kind == "memset":
            return self._memset_node(*node.vals)
        if node.kind == "graph":
            for h in self.graphs[node.child].nodes:
                r = self._run_node(self.graph_nodes[h])
                if r:
                    return r
        return 0

    def _memset_node(self, dst: int, pitch: int, value: int, esize: int, width: int, height: int) -> int:
        row = width * esize
        span = (height - 1) * pitch + row if height > 1 else row
        if self.memory.find(dst, span) is None:
            return E.cudaErrorInvalidValue
        dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[esize]
        for y in range(height):
            arr = np.ctypeslib.as_array((ctypes.c_uint8 * row).from_address(dst + y * pitch)).view(dtype)
            arr[:] = value & ((1 << (8 * esize)) - 1)
        return 0

    # -- stream capture ------------------------------------------------------------------------

    def cudaStreamBeginCapture(self, stream, mode):
        if stream in (0, 1, 2):  # the legacy and per-thread default streams cannot capture
            return E.cudaErrorStreamCaptureUnsupported
        if self._stream_ok(stream):
            return E.cudaErrorInvalidResourceHandle
        if stream in self.stream_captures:
            return E.cudaErrorIllegalState
        g = self._handle("graph")
        self.graphs[g] = Graph()
        self.stream_captures[stream] = StreamCapture(g, stream, mode, {stream: []})
        return 0

    def cudaStreamEndCapture(self, stream, pGraph):
        cap = self.stream_captures.get(stream)
        if cap is None:
            return E.cudaErrorIllegalState
        if cap.origin != stream:
            return E.cudaErrorStreamCaptureUnmatched
        for s in list(cap.tails):
            self.stream_captures.pop(s, None)
        for ev in [e for e, (c, _t) in self.event_captures.items() if c is cap]:
            del self.event_captures[ev]
        if cap.status == _INVALIDATED:
            ctypes.c_void_p.from_address(pGraph).value = None
            return E.cudaErrorStreamCaptureInvalidated
        ctypes.c_void_p.from_address(pGraph).value = cap.graph
        return 0

    def cudaStreamIsCapturing(self, stream, pCaptureStatus):
        cap = self.stream_captures.get(stream)
        ctypes.c_int.from_address(pCaptureStatus).value = _NONE if cap is None else cap.status
        return 0 if cap is not None or not self._stream_ok(stream) else E.cudaErrorInvalidResourceHandle

    def cudaStreamGetCaptureInfo(self, stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                                 numDependencies_out):
        cap = self.stream_captures.get(stream)
        ctypes.c_int.from_address(captureStatus_out).value = _NONE if cap is None else cap.status
        if cap is not None:
            if id_out:
                ctypes.c_ulonglong.from_address(id_out).value = cap.graph
            if graph_out:
                ctypes.c_void_p.from_address(graph_out).value = cap.graph
            if numDependencies_out:
                ctypes.c_size_t.from_address(numDependencies_out).value = len(cap.tails[stream])
            if dependencies_out:
                keep = (ctypes.c_void_p * max(1, len(cap.tails[stream])))(*cap.tails[stream])
                self._handles.append(keep)
                ctypes.c_void_p.from_address(dependencies_out).value = ctypes.addressof(keep)
            if edgeData_out:
                ctypes.c_void_p.from_address(edgeData_out).value = None
        return 0

    def cudaThreadExchangeStreamCaptureMode(self, mode):
        p = ctypes.c_int.from_address(mode)
        p.value, self.capture_mode = self.capture_mode, p.value
        return 0

    def capture_call(self, name: str, vals: list, at: int | None) -> int | None:
        """Record ``name(vals)`` on a capturing stream (the result the call returns), or None
        where nothing captures it (``at``: the index of its ``stream`` argument, None: it has
        none).  Called by the dispatcher before every call while a stream captures."""
        caps = self.stream_captures
        stream = vals[at] if at is not None else 0
        if name in WAITING:
            waited = stream if name in ("cudaStreamSynchronize", "cudaStreamQuery") else None
            hit = [c for s, c in caps.items() if waited is None or s == waited]
            if not hit or (name == "cudaFree" and self.capture_mode == 2):  # relaxed mode allows it
                return None
            for c in hit:
                c.status = _INVALIDATED
            return E.cudaErrorStreamCaptureUnsupported
        if name == "cudaEventRecord" and stream in caps:
            cap = caps[stream]
            self.event_captures[vals[0]] = (cap, list(cap.tails[stream]))
            return 0
        if name == "cudaStreamWaitEvent" and vals[1] in self.event_captures:
            cap, tail = self.event_captures[vals[1]]
            if stream not in caps:  # the stream joins the capture (fork)
                caps[stream] = cap
                cap.tails[stream] = []
            cap.tails[stream] = sorted(set(cap.tails[stream]) | set(tail))
            return 0
        if name not in CAPTURABLE or stream not in caps:
            return None
        cap = caps[stream]
        if cap.status == _INVALIDATED:
            return E.cudaErrorStreamCaptureInvalidated
        if name in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel"):
            func, grid, block, args, shared, _s = vals
            prog = self._program(func)
            if prog is None:
                return E.cudaErrorInvalidDeviceFunction
            node = Node("kernel", func=func, grid=grid, block=block, shared=shared, args=self._copy_args(prog, args))
        elif name == "cudaGraphLaunch":
            node = Node("graph", child=self._exec_graph(vals[0]))
        else:
            vals = list(vals)
            keep = None
            if name == "cudaMemcpy3DAsync":
                keep = ctypes.create_string_buffer(ctypes.string_at(vals[0], _MEMCPY3D_BYTES), _MEMCPY3D_BYTES)
                vals[0] = ctypes.addressof(keep)
            vals[at] = 0  # run on the stream the graph is launched on: work is synchronous here
            node = Node("call", call=name, vals=tuple(vals), keep=keep)
        node.deps = list(cap.tails[stream])
        cap.tails[stream] = [self._add(cap.graph, node)]
        return 0

    def _exec_graph(self, graphExec: int) -> int:
        """A graph holding the nodes of an executable graph (a graph launched into a capture)."""
        h = self._handle("graph")
        self.graphs[h] = Graph()
        prev: list[int] = []
        for _n, node in self.graph_execs.get(graphExec, []):
            prev = [self._add(h, replace(node, deps=prev))]
        return h

    # -- memory pools (one per device: cudaMallocAsync memory is cudaMalloc memory) --------------

    def cudaDeviceGetDefaultMemPool(self, memPool, device):
        if device != 0:
            return E.cudaErrorInvalidDevice
        if not self.mem_pools:
            self.mem_pools[self._handle("memory pool")] = {}
        ctypes.c_void_p.from_address(memPool).value = next(iter(self.mem_pools))
        return 0

    def cudaDeviceGetMemPool(self, memPool, device):
        return self.cudaDeviceGetDefaultMemPool(memPool, device)

    def cudaDeviceSetMemPool(self, device, memPool):
        return 0 if memPool in self.mem_pools else E.cudaErrorInvalidValue

    def cudaMemPoolCreate(self, memPool, poolProps):
        h = self._handle("memory pool")
        self.mem_pools[h] = {}
        ctypes.c_void_p.from_address(memPool).value = h
        return 0

    def cudaMemPoolDestroy(self, memPool):
        return 0 if self.mem_pools.pop(memPool, None) is not None else E.cudaErrorInvalidValue

    def cudaMemPoolSetAttribute(self, memPool, attr, value):
        pool = self.mem_pools.get(memPool)
        if pool is None:
            return E.cudaErrorInvalidValue
        pool[attr] = ctypes.c_uint64.from_address(value).value
        return 0

    def cudaMemPoolGetAttribute(self, memPool, attr, value):
        pool = self.mem_pools.get(memPool)
        if pool is None:
            return E.cudaErrorInvalidValue
        ctypes.c_uint64.from_address(value).value = pool.get(attr, 0)
        return 0

    def cudaMemPoolTrimTo(self, memPool, minBytesToKeep):
        return 0 if memPool in self.mem_pools else E.cudaErrorInvalidValue

    def cudaMallocFromPoolAsync(self, ptr, size, memPool, stream):
        if memPool not in self.mem_pools:
            return E.cudaErrorInvalidValue
        return self.cudaMallocAsync(ptr, size, stream)
