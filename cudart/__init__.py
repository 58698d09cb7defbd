"""``hypa run``: hypa's own CUDA runtime (``libcudart.so``), so unmodified CUDA programs
run on the CPU with every launch emulated and counted.

``api`` lists the runtime functions provided; ``shim`` builds the C library that exports
them and embeds Python; ``host`` implements them; ``program`` inspects the executable
before it runs.
"""
