// Sparse matrix-vector product, CSR format, one thread per row:
// y[row] = sum_k val[k] * x[col[k]] for k in [row_ptr[row], row_ptr[row+1]).
// Exercises: a loop whose bounds are loaded from memory (data-dependent trip
// count, so the branch slice needs row_ptr), gathers through col.
__global__ void spmv_csr(int rows, const int *row_ptr, const int *col,
                         const float *val, const float *x, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    float sum = 0.0f;
    int end = row_ptr[row + 1];
    for (int k = row_ptr[row]; k < end; ++k)
        sum += val[k] * x[col[k]];
    y[row] = sum;
}
