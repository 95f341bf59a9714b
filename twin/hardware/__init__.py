"""Hardware: GPUs, nodes, racks, storage and the fabric, in SI units."""
