// Breadth-first search on a small fixed graph (CSR): the host launches one level per
// iteration and stops when the device reports that the frontier is empty.
#include <cstdio>

#define V 12

__global__ void bfs_level(const int *row, const int *col, int *level, int cur, int *changed) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= V || level[v] != cur) return;
    for (int e = row[v]; e < row[v + 1]; e++) {
        int u = col[e];
        if (level[u] < 0) {
            level[u] = cur + 1;
            *changed = 1;
        }
    }
}

__global__ void init_levels(int *level, int source) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < V) level[v] = v == source ? 0 : -1;
}

int main() {
    // undirected edges: a path 0-1-2-3-4-5, a branch 1-6-7, 2-8, a cycle 8-9-10-8;
    // node 11 is unreachable
    const int row[V + 1] = {0, 1, 4, 7, 9, 11, 12, 14, 15, 18, 20, 22, 22};
    const int col[22] = {1,  0, 2, 6,  1, 3, 8,  2, 4,  3, 5,  4,  1, 7,  6,
                         2, 9, 10,  8, 10,  8, 9};
    const int expect[V] = {0, 1, 2, 3, 4, 5, 2, 3, 3, 4, 4, -1};
    int *d_row, *d_col, *d_level, *d_changed;
    cudaMalloc(&d_row, sizeof row);
    cudaMalloc(&d_col, sizeof col);
    cudaMalloc(&d_level, V * sizeof(int));
    cudaMalloc(&d_changed, sizeof(int));
    cudaMemcpy(d_row, row, sizeof row, cudaMemcpyHostToDevice);
    cudaMemcpy(d_col, col, sizeof col, cudaMemcpyHostToDevice);
    init_levels<<<1, 32>>>(d_level, 0);
    int iterations = 0, changed = 1;
    for (int cur = 0; changed; cur++) {
        changed = 0;
        cudaMemcpy(d_changed, &changed, sizeof changed, cudaMemcpyHostToDevice);
        bfs_level<<<1, 32>>>(d_row, d_col, d_level, cur, d_changed);
        cudaMemcpy(&changed, d_changed, sizeof changed, cudaMemcpyDeviceToHost);
        iterations++;
    }
    int level[V];
    cudaMemcpy(level, d_level, sizeof level, cudaMemcpyDeviceToHost);
    int bad = 0;
    printf("levels:");
    for (int v = 0; v < V; v++) {
        printf(" %d", level[v]);
        bad += level[v] != expect[v];
    }
    printf("\niterations = %d\n", iterations);
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
