// Level-synchronous BFS on a random graph until the frontier is empty: a data-dependent
// whole program (the host loop reads a flag back after every level) for
// benchmarks/run_programs.py (vertices from argv[1], default 200000; 8 edges each).
#include <cstdio>
#include <cstdlib>
#include <vector>
__global__ void level(const int *rowp, const int *cols, int *dist, int n, int d, int *more) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || dist[v] != d) return;
    for (int e = rowp[v]; e < rowp[v + 1]; ++e) {
        int w = cols[e];
        if (dist[w] < 0) { dist[w] = d + 1; *more = 1; }
    }
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000, deg = 8;
    std::vector<int> rowp(n + 1), cols((size_t)n * deg), dist(n, -1);
    unsigned s = 12345;
    for (int v = 0; v <= n; ++v) rowp[v] = v * deg;
    for (size_t e = 0; e < cols.size(); ++e) { s = s * 1103515245u + 12345u; cols[e] = (s >> 8) % n; }
    int *drow, *dcol, *ddist, *dmore;
    cudaMalloc(&drow, (n + 1) * 4); cudaMalloc(&dcol, cols.size() * 4); cudaMalloc(&ddist, n * 4); cudaMalloc(&dmore, 4);
    cudaMemcpy(drow, rowp.data(), (n + 1) * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dcol, cols.data(), cols.size() * 4, cudaMemcpyHostToDevice);
    dist[0] = 0;
    cudaMemcpy(ddist, dist.data(), n * 4, cudaMemcpyHostToDevice);
    int d = 0, more = 1;
    while (more) {
        more = 0;
        cudaMemcpy(dmore, &more, 4, cudaMemcpyHostToDevice);
        level<<<(n + 255) / 256, 256>>>(drow, dcol, ddist, n, d, dmore);
        cudaMemcpy(&more, dmore, 4, cudaMemcpyDeviceToHost);
        ++d;
    }
    cudaMemcpy(dist.data(), ddist, n * 4, cudaMemcpyDeviceToHost);
    // check on the CPU
    std::vector<int> ref(n, -1), q{0};
    ref[0] = 0;
    for (size_t h = 0; h < q.size(); ++h)
        for (int e = rowp[q[h]]; e < rowp[q[h] + 1]; ++e)
            if (ref[cols[e]] < 0) { ref[cols[e]] = ref[q[h]] + 1; q.push_back(cols[e]); }
    int bad = 0, reached = 0;
    for (int v = 0; v < n; ++v) { bad += dist[v] != ref[v]; reached += dist[v] >= 0; }
    printf("bfs %d: %d levels, %d reached: %s\n", n, d, reached, bad ? "FAIL" : "PASS");
    return bad != 0;
}
