// saxpy: y[i] = a * x[i] + y[i]; one thread per element, bounds-checked.
// Exercises: the simplest global load/compute/store, one guarded early exit.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
