"""The network: collectives on NVLink, PCIe and InfiniBand."""
