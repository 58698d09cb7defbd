"""The contract between generated code and the Python driver.

The context (``ctx``) and every warp state (``ws``) are arrays of 64-bit words
at fixed indices, so the layout is written down once, here, and read by both
the code generator and the driver.
"""

from __future__ import annotations

LANES = 32

# -- context words -----------------------------------------------------------
CTX_PARAM = 0          # kernel parameter buffer (pointer)
CTX_WIN_BASE = 1       # window table: host base address per window id (pointer to i64[])
CTX_WIN_SIZE = 2       # window table: size in bytes per window id
CTX_WIN_STRIDE = 3     # window table: per-thread stride (local, call params), else 0
CTX_NWIN = 4           # number of windows
CTX_SHARED = 5         # shared memory of the running CTA
CTX_SHARED_SIZE = 6
CTX_LOCAL = 7          # local memory of the running CTA: threads * local size
CTX_LOCAL_SIZE = 8     # bytes per thread
CTX_CONST = 9
CTX_CONST_SIZE = 10
CTX_CPARAM = 11        # call parameters of the running CTA: threads * size
CTX_CPARAM_SIZE = 12   # bytes per thread
CTX_NTID = 13          # .. 15
CTX_NCTAID = 16        # .. 18
CTX_CTAID = 19         # .. 21 (the CTA running now)
CTX_COUNTERS = 22      # i64 counters (pointer)
CTX_STEPS = 23         # warp-instructions emulated so far
CTX_BUDGET = 24        # step budget (warp-instructions)
CTX_ERR_CODE = 25
CTX_ERR_BLOCK = 26
CTX_ERR_INSTR = 27
CTX_ERR_LANE = 28
CTX_ERR_ADDR = 29
CTX_ERR_WARP = 30
CTX_ERR_CTA = 31
CTX_ERR_AUX = 32
CTX_WS = 33            # warp states of the running CTA (pointer)
CTX_WS_STRIDE = 34     # bytes per warp state
CTX_NWARPS = 35
CTX_NTHREADS = 36      # threads per CTA
CTX_CTA_LINEAR = 37    # linear id of the running CTA
CTX_DYN_SHARED = 38    # dynamic shared memory bytes
CTX_SMCOUNT = 39
CTX_BAR = 40           # 16 barriers x BAR_WORDS
BAR_WORDS = 8
BAR_WAITING = 0        # warps waiting
BAR_ARRIVED = 1        # warps that arrived without waiting (bar.arrive)
BAR_EXPECTED = 2       # warps the barrier waits for (0: every live warp)
BAR_PART = 3           # bar.red: participating threads so far
BAR_TRUE = 4           # bar.red: threads whose predicate is true so far
BAR_RES_PART = 5       # bar.red results of the last release
BAR_RES_TRUE = 6
NUM_BARRIERS = 16
# barrier.cluster: the cluster barrier of a cluster of one CTA, one more slot after the 16
# named barriers; warps count when they arrive (barrier.cluster.arrive), not when they wait
CLUSTER_BARRIER = NUM_BARRIERS
BARRIER_SLOTS = NUM_BARRIERS + 1
# flat memory (``hypa run``): device pointers are host addresses of the program's own
# allocations; a global/generic address outside every window is looked up in this
# sorted table of [start, end) ranges (binary search, last hit remembered)
CTX_FLAT_START = CTX_BAR + BARRIER_SLOTS * BAR_WORDS  # pointer to i64 starts (ascending)
CTX_FLAT_END = CTX_FLAT_START + 1                    # pointer to i64 ends
CTX_FLAT_N = CTX_FLAT_START + 2                      # number of ranges (0: no flat memory)
CTX_FLAT_HINT = CTX_FLAT_START + 3                   # index of the range hit last
CTX_PRINTF = CTX_FLAT_START + 4                      # device printf: void(*)(ctx, fmt, args) or 0
CTX_FLAT_EXACT_END = CTX_FLAT_START + 5               # pointer to i64 ends of the bytes asked for
CTX_FLAT_SLACK = CTX_FLAT_START + 6                   # first address touched outside the bytes asked for (0: none)
# initcheck (reads of shared/local bytes no thread wrote): a shadow byte per byte, 0xFF once
# written, CTX_SHADOW_* bytes after the byte (shared: after the CTA's shared bytes, local:
# after the CTA's local block); 0 when initcheck is off
CTX_SHADOW_SHARED = CTX_FLAT_START + 7
CTX_SHADOW_LOCAL = CTX_FLAT_START + 8
CTX_UNINIT_COUNT = CTX_FLAT_START + 9                 # thread reads that touched unwritten bytes
CTX_UNINIT_INSTR = CTX_FLAT_START + 10                # the first such read: instruction
CTX_UNINIT_ADDR = CTX_FLAT_START + 11                 # .. its lane's address operand
CTX_UNINIT_LANE = CTX_FLAT_START + 12
CTX_UNINIT_WARP = CTX_FLAT_START + 13
CTX_UNINIT_CTA = CTX_FLAT_START + 14                  # .. linear CTA id
CTX_STACK_SIZE = CTX_FLAT_START + 15                  # call stack per thread, bytes (as the GPU counts them)
# mbarrier updates of the running CTA so far: a scheduler round in which no barrier releases
# and no mbarrier changes is a deadlock (every warp waits on state nobody can change)
CTX_MBAR_EPOCH = CTX_FLAT_START + 16
CTX_TEXTURE = CTX_FLAT_START + 17                    # texture instructions: int64(*)(ctx, text, lanes, in, out) (runtime/emulator/textures.py)
# the address trace of the timing estimate's cache model (runtime/models/cache_model.py): each global
# access appends (sector, warp | slot << 32 | kind << 48 | lanes << 57) per distinct 32-byte sector whose
# 128-byte line the sampling keeps (hash(line) mod 2**CTX_TRACE_SHIFT == 0); a full buffer
# raises the shift and drops the records it no longer keeps
CTX_TRACE = CTX_FLAT_START + 18                      # pointer to i64 pairs, or 0: no trace
#: multiplier of the line hash that picks the sampled lines (Fibonacci hashing): the JIT's
#: sampling and the trace's reader (memory_trace.line_kept) must agree
TRACE_LINE_HASH = 0x9E3779B97F4A7C15
CTX_TRACE_LEN = CTX_FLAT_START + 19                  # records written
CTX_TRACE_CAP = CTX_FLAT_START + 20                  # records the buffer holds
CTX_TRACE_SHIFT = CTX_FLAT_START + 21                # set-sampling level (0: every line)
CTX_CTA_STEPS = CTX_FLAT_START + 22                  # pointer to i64 pairs per CTA: its warp-instructions and critical steps, or 0
CTX_HEAP = CTX_FLAT_START + 23                       # device malloc/free: int64(*)(ctx, op, lanes, in, out) (runtime/emulator/device_heap.py)
CTX_TRACE_ATOMICS = CTX_FLAT_START + 24              # atomic sector requests seen by the trace (kept or not)
CTX_TRACE_ATOMIC_EXTRA = CTX_FLAT_START + 25         # their operations beyond the first on one word
CTX_FLAT_EXACT_START = CTX_FLAT_START + 26          # pointer to i64 starts of the bytes asked for
# a cooperative launch (cudaLaunchCooperativeKernel): every CTA of the grid resident at once.
# Its CTAs run interleaved: one runs until its warps all spin or wait (a grid-wide barrier
# is a spin on a global word), then its state moves to its save area and the next runs.
CTX_COOP = CTX_FLAT_START + 27                        # pointer to the CTAs' save areas, or 0: CTAs one after another
CTX_COOP_STRIDE = CTX_FLAT_START + 28                 # bytes per CTA's save area (coop_save_bytes)
CTX_GRID_WORKSPACE = CTX_FLAT_START + 29              # %envreg1:%envreg2, cooperative groups' grid workspace (0: none)

# a cooperative CTA's save area: these words, the barrier words, then its shared, local and
# call-parameter memory (shadows included) and its warp states, each as the CTA has them
COOP_STATE = 0       # 0: not started, 1: suspended, 2: done
COOP_DONE = 1        # warps that have exited
COOP_WAITERS = 2     # warps waiting at a barrier
COOP_CRITICAL = 3    # critical steps so far
COOP_ROUND_MAX = 4   # the longest warp of the phase so far
COOP_STEPS = 5       # warp-instructions the CTA ran so far
COOP_EPOCH = 6       # CTX_MBAR_EPOCH
COOP_HEADER_WORDS = 8


def coop_save_bytes(shared: int, local: int, cparam: int, ws: int) -> int:
    """Bytes of one CTA's save area, given its memories' sizes (shadows included)."""
    raw = 8 * (COOP_HEADER_WORDS + BARRIER_SLOTS * BAR_WORDS) + shared + local + cparam + ws
    return (raw + 63) // 64 * 64

# racecheck (hazards between threads of a CTA on shared memory with no barrier between them,
# runtime/emulator/lowering/racecheck.py): a shadow of RACE_SHADOW_WORDS i64 per shared byte
# (0: racecheck off), the synchronisation epoch (one more at each CTA start, barrier release,
# mbarrier update and bar.warp.sync), the hazards by kind and the first one
CTX_RACE_SHADOW = CTX_FLAT_START + 30
CTX_RACE_EPOCH = CTX_FLAT_START + 31
CTX_RACE_COUNT = CTX_FLAT_START + 32                  # .. +34: WAW, WAR, RAW hazards (thread accesses)
CTX_RACE_KIND = CTX_FLAT_START + 35                   # the first hazard: RACE_WAW/WAR/RAW
CTX_RACE_INSTR = CTX_FLAT_START + 36                  # .. the later access's instruction
CTX_RACE_THREAD = CTX_FLAT_START + 37                 # .. its thread (linear in the CTA)
CTX_RACE_OTHER = CTX_FLAT_START + 38                  # .. the earlier access's shadow word
CTX_RACE_ADDR = CTX_FLAT_START + 39                   # .. the shared offset
CTX_RACE_CTA = CTX_FLAT_START + 40                    # .. linear CTA id
# the clock (%clock, %clock64, %globaltimer; runtime/emulator/clock.py): the device's cycles when
# the launch started, cycles per warp-instruction, the clock rate in MHz (for nanoseconds)
CTX_CLOCK = CTX_FLAT_START + 41
CTX_CLOCK_CPI = CTX_FLAT_START + 42
CTX_CLOCK_MHZ = CTX_FLAT_START + 43
# rsqrt/ex2/rcp/sqrt.approx.f32: pointer to the addresses of the MUFU tables' low bytes
# (runtime/emulator/mufu.py, TABLES order; 0: a table the kernel does not read), or 0
CTX_MUFU = CTX_FLAT_START + 44
# the trace's L1 window (runtime/models/cache_model.py, ``l1_window_levels``): every distinct
# sector of the accesses of the CTAs SM 0 runs in the first wave -- linear ids 0, stride,
# 2*stride .. below CTX_L1_WINDOW_CTAS*stride -- unsampled, until the buffer is full: where
# the trace is sampled down, the per-SM L1s see too few lines to tell hits from misses
CTX_L1_WINDOW = CTX_FLAT_START + 45                   # pointer to i64 pairs (as CTX_TRACE's), or 0
CTX_L1_WINDOW_LEN = CTX_FLAT_START + 46               # records written
CTX_L1_WINDOW_CAP = CTX_FLAT_START + 47               # records the buffer holds
CTX_L1_WINDOW_CTAS = CTX_FLAT_START + 48              # CTAs of the window
CTX_L1_WINDOW_STRIDE = CTX_FLAT_START + 49            # SMs the CTAs are dealt to (their linear ids' stride)
CTX_WORDS = CTX_FLAT_START + 50
#: the window's size: records, and CTAs at most (an SM holds at most 32 CTAs)
L1_WINDOW_RECORDS = 1 << 18
L1_WINDOW_MAX_CTAS = 32

#: racecheck hazard kinds (the index of their count after CTX_RACE_COUNT)
RACE_WAW, RACE_WAR, RACE_RAW = 0, 1, 2
#: racecheck shadow: per shared byte, the last write and two reads of different threads since the
#: last synchronisation, each a word: bits 0-31 the epoch, 32-42 the thread + 1, 43 atomic,
#: 44-63 the instruction
RACE_SHADOW_WORDS = 3
RACE_THREAD_SHIFT, RACE_ATOMIC_BIT, RACE_INSTR_SHIFT = 32, 43, 44

#: trace record kinds (bits 48.. of a record's second word)
TRACE_LOAD = 0        # cached in L1 (ld.global .ca/.nc/default, generic loads)
TRACE_LOAD_L2 = 1     # L1 bypassed (.cg/.cv/.volatile, cp.async.cg)
TRACE_STORE = 2
TRACE_ATOMIC = 3      # atom/red: performed at L2
TRACE_UNSAMPLED = 1 << 56  # an atomic whose line the sampling does not keep (counted, not cached)
TRACE_LANES_SHIFT = 57     # bits 57..62: the lanes on the word of the sector's first lane (1..32)
TRACE_FIRST = 1 << 63      # the first record an access kept (its request starts here)

# -- windows (generic address = window << 40 | offset) -------------------------
WINDOW_SHIFT = 40
OFFSET_MASK = (1 << WINDOW_SHIFT) - 1
WIN_SHARED = 1
WIN_LOCAL = 2
WIN_CONST = 3
WIN_PARAM = 4
WIN_CPARAM = 5
WIN_FIRST_GLOBAL = 8

# -- warp state words ----------------------------------------------------------
WS_RESUME = 0          # 0: start; k: resume point k (after barrier k, then the mbarrier waits)
WS_MASK = 1            # active mask of the current SIMT entry
WS_RPC = 2             # its reconvergence block (-1: function exit)
WS_TOP = 3             # entries on the SIMT stack below the current one
WS_EXITED = 4          # lanes that have exited
WS_STATUS = 5          # scheduler: 0 ready, 1 waiting at a barrier, 2 done
WS_BAR_ID = 6
WS_BAR_EXPECT = 7      # warps the barrier waits for (0: every live warp)
# the per-thread call stack (real calls, alloca; docs/design.md, "Execution model"), the same for
# every lane of the warp: local-memory offsets of the stack top, the running function's
# frame and its call record; the call depth
WS_SP = 8
WS_FP = 9
WS_REC = 10
WS_DEPTH = 11
WS_STACK_USED = 12  # bytes of the stack used, counted as the GPU counts frames (the limit's measure)
WS_YIELDED = 13        # 1: a lane group yielded at a spin loop; the next to reach one runs on
WS_PHASE_STEPS = 14    # scheduler: warp-instructions the warp ran since the last barrier release
WS_STACK = 16          # SIMT stack: 3 words per entry (pc, rpc, mask)
STACK_DEPTH = 256
WS_FRAME_BYTES_OFFSET = (WS_STACK + 3 * STACK_DEPTH) * 8  # values of the warp

# -- warp_run / run_ctas return codes ------------------------------------------
RC_EXIT = 0
RC_BARRIER = 1
RC_ERROR = 2
RC_YIELD = 3       # a failed mbarrier wait: run the other warps, then retry (status stays ready)
RC_TURN = 4        # the interleaved schedule: the warp's turn ended (stays ready)
RC_SPIN = 5        # ... at a spin loop's header: it waits for another thread (a CTA all of whose
                   # warps spin or wait is blocked: a cooperative launch runs another CTA)

# -- error codes (CTX_ERR_CODE) -------------------------------------------------
ERR_NONE = 0
ERR_OUT_OF_BOUNDS = 1
ERR_STEP_BUDGET = 2
ERR_TRAP = 3
ERR_STACK_OVERFLOW = 4
ERR_DEADLOCK = 5
ERR_BAD_BRANCH_INDEX = 6
ERR_MISALIGNED = 7
ERR_BAD_WINDOW = 8
ERR_ASSERT = 9  # call __assertfail: a failed assert() stops the kernel, as on the GPU
ERR_CALL_STACK = 10  # a real call or alloca past the per-thread stack (CTX_ERR_ADDR: depth or bytes)
ERR_BAD_CALL_TARGET = 11  # an indirect call through an address that is no possible target

# -- the per-thread call stack ------------------------------------------------------
#: bytes per thread, as CUDA's default (cudaLimitStackSize); Emulator(stack_size=), --stack-size
DEFAULT_STACK_SIZE = 1024
#: the deepest call the counters record (a call deeper than this stops the launch)
CALL_DEPTH_COUNTERS = 1024
#: a real call's record in the caller's frame: call site, reconvergence block, frame, record,
#: stack used (32-bit words each)
CALL_RECORD_BYTES = 20
#: what a call costs of the stack size besides the registers it saves and the callee's
#: locals: the return address, as in the GPU's frames (ptxas -v: a function whose call keeps
#: one 32-bit register live has a 16-byte frame)
RETURN_ADDRESS_BYTES = 8


def function_address(name: str) -> int:
    """The value ``mov.u64 %rd, func`` gives: opaque, non-zero, the same in every process,
    in no memory window (an indirect call compares it with its possible targets')."""
    import zlib

    return (0xFFFF << WINDOW_SHIFT) + (zlib.crc32(name.encode()) & 0xFFFFFF)
ERR_CLUSTER_RANK = 12  # mapa to a CTA rank other than 0 (launches have clusters of one CTA)
ERR_NO_CLUSTER = 14  # st.async / red.async in a launch without clusters (the GPU: an illegal instruction)
ERR_HEAP = 15  # device free() of an address no live malloc block starts at: DeviceHeap.error
ERR_TEXTURE = 13  # a texture or surface instruction faulted (bad handle, .trap out of range): TextureTable.error
ERR_BARRIER_COUNT = 16  # bar/barrier waits for more threads than the CTA has (CTX_ERR_ADDR: the count)

# -- counters ---------------------------------------------------------------------
# per block: warp executions, thread executions, divergent branches, threads that take the
# block's conditional branch (its CFG edge counts: the rest fall through)
BLOCK_COUNTERS = 4
# after every other counter: warp-instructions executed by each warp slot of a CTA (warp 0 .. 31),
# summed over the CTAs (how evenly a CTA's warps share the work)
WARP_SLOTS = 32
# per tracked memory instruction (memory metrics): requests, 32-byte sectors,
# 128-byte lines, shared-memory wavefronts, ideal wavefronts
MEM_COUNTERS = 5
