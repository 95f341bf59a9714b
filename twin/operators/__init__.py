"""Level 1 for every workload: the time of one kernel on one GPU.

``roofline`` prices a GEMM, a fused attention and a memory-bound kernel by the
roofline of the GPU's sustained rates; ``elementwise`` counts the bytes the
memory-bound kernels of a transformer layer move; ``launches`` the fixed launch
cost and how many kernels a layer launches. The training step (``twin.engine``)
and the serving iteration (``twin.serving``) both build on it.
"""
