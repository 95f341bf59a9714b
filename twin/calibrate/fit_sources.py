"""The fits of each kind of reading: collectives (nccl-tests), operators (GEMM and attention timings),
GPU power (nvidia-smi, DCGM) and failures (sacct); each returns ``twin.profile.Fit`` rows."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from twin import catalog
from twin.api import parse_scenario
from twin.api.specs import cluster_of
from twin.calibrate.nccl import NcclRun
from twin.calibrate.operator_rates import OperatorTimings
from twin.calibrate.power import PowerLog
from twin.calibrate.sacct import Accounting
from twin.calibration import Efficiency
from twin.jobs.failures import failure_profile
from twin.operators.roofline import OperatorModel
from twin.hardware.specs import gpu_spec
from twin.network.collectives import CommModel
from twin.power.devices import gpu_power
from twin.profile import Fit
from twin.units import SECONDS_PER_HOUR
from twin.workload.placement import GroupShape

# Message sizes that measure bandwidth, not latency: at or above this (nccl-tests' busbw plateau
# starts near 64-256 MB on NVLink and InfiniBand; NVIDIA/nccl-tests doc/PERFORMANCE.md).
BANDWIDTH_BYTES = 64 * 2**20
# Message sizes that measure latency: at or below this.
LATENCY_BYTES = 8 * 2**10
# The failure profile a site's accounting is set against (catalog failure_profiles.yaml).
REFERENCE_FAILURES = "llama3-h100"
# An efficiency the prediction moves by less than this share per share of change does not bind.
MIN_SENSITIVITY = 0.3

Scaler = Callable[..., tuple[float, float]]


def _node_for(run: NcclRun) -> str | None:
    """The catalog node of the run's GPU with room for its ranks per node (the largest such server)."""
    rows = [(n, r) for n, r in catalog.table("nodes").items() if r.get("gpu") == run.gpu
            and int(r.get("gpus", 0)) >= run.ranks_per_node]
    return max(rows, key=lambda nr: int(nr[1]["gpus"]))[0] if rows else None


def _comm(node: str, nodes: int) -> Callable[[dict[str, float]], CommModel]:
    scenario = parse_scenario({"cluster": {"node": node, "nodes": nodes},
                               "training": {"model": "llama2-7b", "tokens": "1B", "seq_len": 2048,
                                            "global_batch": 1024}}, "nccl-tests")
    cluster = cluster_of(scenario.cluster)
    return lambda eff: CommModel(cluster, Efficiency.calibrated(eff))


def _busbw(comm: CommModel, run: NcclRun, size: float) -> float:
    return comm.busbw_Bps(GroupShape(run.ranks, run.ranks_per_node), run.op, size)


def _binding_key(run: NcclRun, model: Callable, size: float) -> str:
    """The efficiency a run's bandwidth depends on most (network across nodes; nvlink, nvls or pcie within one)."""
    if run.nodes > 1:
        return "network"
    base = _busbw(model({}), run, size)
    defaults = Efficiency.calibrated()
    effect = {k: abs(1 - _busbw(model({k: getattr(defaults, k) * 0.9}), run, size) / base) / 0.1
              for k in ("nvlink", "nvls", "pcie")}
    return max(effect, key=effect.get)


def collective_fits(readings: list, fit_scale: Scaler) -> list[Fit]:
    """Bus bandwidth per efficiency (nvlink, nvls, pcie, network) and the latency of small messages per tier."""
    groups: dict[str, list[tuple[NcclRun, Callable, list]]] = {}
    fits = []
    for run in (r for r in readings if isinstance(r, NcclRun)):
        node = _node_for(run)
        if node is None or run.ranks < 2:
            continue
        model = _comm(node, run.nodes)
        big = [row for row in run.rows if row.size_bytes >= BANDWIDTH_BYTES] or list(run.rows[-3:])
        groups.setdefault(_binding_key(run, model, big[-1].size_bytes), []).append((run, model, big))
        fits += _latency_fit(run, model)
    defaults = Efficiency.calibrated()
    for key, members in groups.items():
        measured = [row.busbw_Bps for _, _, big in members for row in big]

        def predict(value: float, key=key, members=members) -> list[float]:
            return [_busbw(model({key: value}), run, row.size_bytes) for run, model, big in members for row in big]

        value, residual = fit_scale(predict, measured, getattr(defaults, key))
        fits.append(Fit(key, value, getattr(defaults, key), residual, len(measured), "fraction",
                        ", ".join(sorted({run.path for run, _, _ in members}))))
    return fits


def _latency_fit(run: NcclRun, model: Callable) -> list[Fit]:
    small = [row for row in run.rows if 0 < row.size_bytes <= LATENCY_BYTES]
    if not small:
        return []
    comm, n = model({}), run.ranks
    factor = {"all_reduce": 2 * (n - 1) / n, "send_recv": 1.0}.get(run.op, (n - 1) / n)
    predicted = [row.size_bytes * factor / _busbw(comm, run, row.size_bytes) for row in small]
    measured = [row.time_s for row in small]
    value, default = statistics.median(measured), statistics.median(predicted)
    spread = statistics.pstdev(measured) / value if len(measured) > 1 and value > 0 else 0.0
    tier = "inter-node" if run.nodes > 1 else "intra-node"
    return [Fit(f"latency {run.op} {tier} ({run.ranks} ranks)", value, default, spread, len(small), "s", run.path,
                applied=False)]


def _op_rate(kind: str, dims: tuple, precision: str, kernel: str | None, gpu: str, eff: dict) -> float:
    """The twin's FLOP/s for one measured operator row (as benchmarks/operator_rates.py prices it)."""
    spec, efficiency = gpu_spec(gpu), Efficiency.calibrated(eff)
    if kind == "gemm":
        m, n, k = dims
        return 2.0 * m * n * k / OperatorModel(spec, precision, efficiency, separate_fp8_cast=False).matmul_s(m, n, k)
    ops = OperatorModel(spec, "bf16", efficiency, attention_kernel=kernel or "flash")
    rate = ops.attention_flops if kind == "attention-forward" else ops.attention_backward_flops
    return rate / (ops.padded_head_dim(dims[3]) / dims[3])


def operator_fits(readings: list, fit_scale: Scaler) -> list[Fit]:
    """matmul (every GEMM row) and attention (every attention row) efficiencies; per dtype reported too."""
    fits, defaults = [], Efficiency.calibrated()
    runs = [r for r in readings if isinstance(r, OperatorTimings) and r.gpu]
    for key, kinds in (("matmul", ("gemm",)), ("attention", ("attention-forward", "attention-backward"))):
        rows = [(run.gpu, row) for run in runs for row in run.rows if row.kind in kinds]
        rows = [(g, row) for g, row in rows if _binds(g, row, key, defaults)]
        if not rows:
            continue

        def predict(value: float, key=key, rows=rows) -> list[float]:
            return [_op_rate(r.kind, r.dims, r.precision, r.kernel, g, {key: value}) for g, r in rows]

        value, residual = fit_scale(predict, [r.measured_flops for _, r in rows], getattr(defaults, key))
        source = ", ".join(sorted({run.path for run in runs}))
        fits.append(Fit(key, value, getattr(defaults, key), residual, len(rows), "fraction", source))
        by_dtype = sorted({r.precision for _, r in rows})
        for dtype in by_dtype if len(by_dtype) > 1 else []:
            chosen = [(g, r) for g, r in rows if r.precision == dtype]
            v, res = fit_scale(lambda x, c=chosen: [_op_rate(r.kind, r.dims, r.precision, r.kernel, g, {key: x})
                                                    for g, r in c], [r.measured_flops for _, r in chosen],
                               getattr(defaults, key))
            fits.append(Fit(f"{key} {dtype}", v, getattr(defaults, key), res, len(chosen), "fraction", source,
                            applied=False))
    return fits


def _binds(gpu: str, row, key: str, defaults: Efficiency) -> bool:
    """Whether the row's predicted rate moves with the efficiency (compute-bound), not the memory roofline."""
    base = _op_rate(row.kind, row.dims, row.precision, row.kernel, gpu, {})
    lower = _op_rate(row.kind, row.dims, row.precision, row.kernel, gpu, {key: getattr(defaults, key) * 0.9})
    return (1 - lower / base) / 0.1 >= MIN_SENSITIVITY


def power_fits(readings: list) -> list[Fit]:
    """Idle and loaded GPU power per GPU type, against the catalog's idle and full-compute draw (reported)."""
    fits = []
    for log in (r for r in readings if isinstance(r, PowerLog) and r.gpu):
        spec = gpu_spec(log.gpu)
        for name, stat, default in (("idle", log.idle_w(), spec.idle_w),
                                    ("loaded", log.loaded_w(), gpu_power(spec).phase_w("compute"))):
            if stat is not None:
                fits.append(Fit(f"{log.gpu} {name} power", stat[0], default, stat[1], stat[2], "W", log.path,
                                applied=False))
    return fits


def _gpus_per_node() -> int:
    """GPUs per node of the reference profile's cluster (Llama 3: 16,384 GPUs on 2,048 nodes)."""
    row = catalog.table("failure_profiles")[REFERENCE_FAILURES]
    return int(row["gpus"]) // int(row["nodes"])


def failure_fits(readings: list) -> list[Fit]:
    """Failures per GPU-hour from job accounting, as a scale of the reference profile's rate (applied),
    and the median queue wait (reported)."""
    logs = [r for r in readings if isinstance(r, Accounting)]
    gpu_hours = sum(a.gpu_hours() for a in logs)
    if not logs or gpu_hours <= 0:
        return []
    count = sum(sum(a.failures().values()) for a in logs)
    reference = failure_profile(REFERENCE_FAILURES)
    per_node = _gpus_per_node()
    default_per_gpu_hour = SECONDS_PER_HOUR / reference.mtbf_s(per_node, 1) / per_node
    measured = count / gpu_hours
    residual = 1.0 / math.sqrt(count) if count else 1.0          # Poisson: relative error of a count
    source = ", ".join(a.path for a in logs)
    fits = [Fit("failure_rate_scale", max(measured / default_per_gpu_hour, 1e-3), 1.0, residual, count, "",
                source)]
    fits += _failures_by_cause(logs, reference, gpu_hours, source)
    waits = [j.wait_s for a in logs for j in a.jobs if j.wait_s is not None]
    if waits:
        fits.append(Fit("median queue wait", statistics.median(waits), math.nan, 0.0, len(waits), "s", source,
                        applied=False))
    return fits


# Which components of the reference profile a Slurm failure cause stands for: a node that fails takes its
# job down on hardware (the profile's components that send the node to repair); a job that fails on its
# own is software (those a restart fixes). Out-of-memory has no counterpart in the profile.
CAUSE_COMPONENTS = {"node": lambda c: c.replace, "job": lambda c: not c.replace, "memory": lambda c: False}


def _failures_by_cause(logs: list[Accounting], reference, gpu_hours: float, source: str) -> list[Fit]:
    """Failures per GPU-hour of each cause against the reference profile's components of that kind (reported)."""
    counts: dict[str, int] = {}
    for log in logs:
        for cause, n in log.failures().items():
            counts[cause] = counts.get(cause, 0) + n
    fits = []
    for cause, n in sorted(counts.items()):
        wanted = CAUSE_COMPONENTS[cause]
        default = sum(c.rate_per_device_hour / (_gpus_per_node() if c.per == "node" else 1)
                      for c in reference.components if wanted(c))
        fits.append(Fit(f"{cause} failures per GPU-hour", n / gpu_hours, default if default else math.nan,
                        1.0 / math.sqrt(n), n, "1/GPU-h", source, applied=False))
    return fits
