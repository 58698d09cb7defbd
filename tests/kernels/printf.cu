// Device-side printf: the PTX declares `.extern .func vprintf`, holds the format
// string as a `.global .b8 $str[...]` array with an initializer, and builds the
// argument buffer in a `.local` array before `call.uni vprintf`.
// Only threads that see a negative value print (data-dependent).
__global__ void debug_print(const int *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && in[i] < 0)
        printf("negative value %d at %d (block %d)\n", in[i], i, (int)blockIdx.x);
}
