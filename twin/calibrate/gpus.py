"""The catalog GPU a tool's device name means ("NVIDIA H100 80GB HBM3" → h100-sxm)."""

from __future__ import annotations

import re

# Device names as nvidia-smi, DCGM, nccl-tests and torch.cuda.get_device_name() print them, first match wins.
DEVICE_PATTERNS = (
    (r"GH200.*144", "gh200-144gb"), (r"GH200", "gh200"), (r"H200", "h200"), (r"H100.*NVL", "h100-nvl"),
    (r"H100.*PCIe", "h100-pcie"), (r"H100", "h100-sxm"), (r"A100.*40GB", "a100-40gb"), (r"A100", "a100-80gb"),
    (r"L40S", "l40s"), (r"\bL4\b", "l4"), (r"B200", "b200"),
)


def catalog_gpu(device: str) -> str | None:
    """The catalog GPU name of a device name, or None when the twin has no such GPU."""
    for pattern, name in DEVICE_PATTERNS:
        if re.search(pattern, device, re.IGNORECASE):
            return name
    return None
