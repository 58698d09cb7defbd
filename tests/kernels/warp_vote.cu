// Warp vote and match intrinsics.
// warp_vote:   __ballot_sync, __any_sync, __all_sync on a data predicate,
//              __activemask() inside a divergent branch (lanes 0-15: 16 lanes
//              when they run converged), __popc of both masks.
// warp_match:  __match_any_sync (sm_70+): lanes with equal keys get the same
//              mask; the lowest lane of each group writes the group size.
__global__ void warp_vote(const int *in, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    int any = __any_sync(0xffffffffu, v < 0);
    int all = __all_sync(0xffffffffu, v != 0);
    unsigned active = 0;
    if ((threadIdx.x & 31) < 16)
        active = __activemask();
    if (i < n)
        out[i] = __popc(ballot) + (any << 8) + (all << 9) + (__popc(active) << 10);
}

#if __CUDA_ARCH__ >= 700
__global__ void warp_match(const int *keys, int *group_size, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int key = (i < n) ? keys[i] : -1;
    unsigned peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    int leader = __ffs(peers) - 1;
    if (i < n)
        group_size[i] = (lane == leader) ? __popc(peers) : 0;
}
#endif
