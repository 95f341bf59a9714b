"""nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``, ``alltoall_perf``,
``sendrecv_perf``), read as the tests print it (NVIDIA/nccl-tests, src/common.cu ``print_header``).

The header says which ranks ran where (``#  Rank  0 Group  0 Pid 1234 on node-01 device  0 [0x1b] NVIDIA
H100 80GB HBM3``), a ``#  size  count  type  redop  root  time  algbw  busbw  #wrong ...`` line names the
columns (older versions have no ``redop``/``root``; ``error`` instead of ``#wrong``), and each data row gives
the out-of-place and in-place time (us) and bandwidths (GB/s) of one message size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from twin.calibrate.gpus import catalog_gpu
from twin.calibrate.logs import LogError, number
from twin.units import SECONDS_PER_US

# The collective each test binary measures (nccl-tests' binary names → the twin's operation names).
TESTS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
         "alltoall": "all_to_all", "sendrecv": "send_recv"}
GB = 1e9           # nccl-tests prints bandwidths in GB/s (10^9 bytes per second)
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$")


@dataclass(frozen=True)
class NcclRow:
    size_bytes: float
    time_s: float          # out-of-place
    busbw_Bps: float       # out-of-place


@dataclass(frozen=True)
class NcclRun:
    path: str
    op: str                # the twin's operation name
    ranks: int
    nodes: int
    device: str            # as printed
    gpu: str | None        # catalog name
    rows: tuple[NcclRow, ...]

    @property
    def ranks_per_node(self) -> int:
        return self.ranks // self.nodes


def looks_like(text: str) -> bool:
    return "# Using devices" in text or bool(re.search(r"^#\s+size\s+count\s+type", text, re.MULTILINE))


def _operation(path: Path, text: str) -> str:
    for key, op in TESTS.items():
        if key in path.name.lower().replace("-", "_"):
            return op
    command = re.search(r"(all_reduce|all_gather|reduce_scatter|alltoall|sendrecv)_perf", text)
    if command:
        return TESTS[command.group(1)]
    raise LogError(path, 1, "nccl-tests output, but neither its name nor its text says which test "
                            f"(name the file after the binary: {', '.join(k + '_perf' for k in TESTS)})")


def _columns(line: str) -> list[str]:
    return line.lstrip("#").split()


def parse(path: str | Path, text: str) -> NcclRun:
    """One nccl-tests run; a truncated or foreign file raises a LogError naming the line."""
    path = Path(path)
    hosts: dict[int, str] = {}
    device, header, rows = "", None, []
    for n, line in enumerate(text.splitlines(), 1):
        rank = _RANK.match(line)
        if rank:
            hosts[int(rank.group(1))] = rank.group(2)
            device = device or rank.group(3)
            continue
        if line.startswith("#"):
            cols = _columns(line)
            if cols[:2] == ["size", "count"] and "busbw" in cols:
                header = cols
            continue
        if not line.strip() or header is None:
            continue
        rows.append(_row(path, n, line.split(), header))
    if header is None:
        raise LogError(path, 1, "no nccl-tests column header ('#  size  count  type ... time  algbw  busbw')")
    if not rows:
        raise LogError(path, len(text.splitlines()), "nccl-tests output without a single result row (truncated?)")
    if not hosts:
        raise LogError(path, 1, "no '#  Rank N ... on HOST device N [..] NAME' lines: the ranks and nodes are unknown")
    nodes = len(set(hosts.values()))
    if len(hosts) % nodes:
        raise LogError(path, 1, f"{len(hosts)} ranks on {nodes} nodes is not the same count per node")
    return NcclRun(str(path), _operation(path, text), len(hosts), nodes, device, catalog_gpu(device), tuple(rows))


def _row(path: Path, n: int, fields: list[str], header: list[str]) -> NcclRow:
    # header: size count type [redop root] time algbw busbw #wrong|error time algbw busbw #wrong|error
    width = len(header)
    if len(fields) != width:
        raise LogError(path, n, f"a result row of {len(fields)} fields under a header of {width} (truncated or "
                                "mixed-up output)")
    at = {name: header.index(name) for name in ("size", "time", "busbw")}
    size = number(fields[at["size"]], path, n, "size")
    time_s = number(fields[at["time"]], path, n, "time") * SECONDS_PER_US   # printed in µs
    busbw = number(fields[at["busbw"]], path, n, "busbw") * GB
    return NcclRow(size, time_s, busbw)
