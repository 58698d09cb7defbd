// One level of a level-synchronous breadth-first search on a CSR graph.
// Every vertex whose level equals `depth` visits its neighbours; unvisited
// neighbours (level < 0) get depth + 1, and *changed is set so the host runs
// another level. Exercises: data-dependent outer test and inner loop bounds,
// a data-dependent branch inside the loop, benign racy writes of equal values.
__global__ void bfs_level(int nv, const int *row_ptr, const int *adj, int *level,
                          int depth, int *changed)
{
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= nv || level[v] != depth)
        return;
    for (int e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {
        int u = adj[e];
        if (level[u] < 0) {
            level[u] = depth + 1;
            *changed = 1;
        }
    }
}
