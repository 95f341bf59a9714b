"""The catalog as tables (``python -m twin catalog gpus | nodes | models | stacks | engines``): one row per entry,
the figures a reader compares, each from its catalog file (where the sources are)."""

from __future__ import annotations

from twin import catalog
from twin.units import BITS_PER_BYTE, fmt_si

YES = {True: "yes", False: "no"}


def catalog_rows(kind: str) -> tuple[list[str], list[list[str]]]:
    from twin.engine.stack import stack_profile
    from twin.hardware.specs import gpu_spec, node_spec
    from twin.units import fmt_bytes
    from twin.workload.model import model_spec

    if kind == "gpus":
        header = ["name", "description", "BF16 TFLOP/s", "FP8 TFLOP/s", "memory", "HBM GB/s", "TDP W", "idle W",
                  "NVLink GB/s", "MIG"]
        rows = []
        for name in catalog.names("gpus"):
            g = gpu_spec(name)
            fp8 = g.peak_flops.get("fp8")
            rows.append([name, g.description, f"{g.peak('bf16') / 1e12:.0f}", f"{fp8 / 1e12:.0f}" if fp8 else "-",
                         fmt_bytes(g.memory_bytes), f"{g.memory_Bps / 1e9:.0f}", f"{g.tdp_w:.0f}", f"{g.idle_w:.0f}",
                         f"{g.nvlink_Bps / 1e9:.0f}" if g.nvlink_Bps else "-", YES[bool(g.mig)]])
        return header, rows
    if kind == "nodes":
        from twin.power.devices import node_power

        header = ["name", "GPUs", "intra-node", "compute NICs", "storage NICs", "idle kW", "max power kW", "CPU"]
        rows = []
        for name in catalog.names("nodes"):
            n = node_spec(name)
            rows.append([name, f"{n.gpus}x {n.gpu.name}", n.intra,
                         f"{n.compute_nics.count}x {fmt_si(n.compute_nics.line_rate_Bps * BITS_PER_BYTE, 'b/s')}",
                         f"{n.storage_nics.count}x {fmt_si(n.storage_nics.line_rate_Bps * BITS_PER_BYTE, 'b/s')}",
                         f"{node_power(n).idle_w / 1e3:.2f}", f"{n.max_power_w / 1e3:.2f}", n.cpu])
        return header, rows
    if kind == "stacks":
        header = ["name", "attention", "kernels", "autocast", "grad reduce", "overlap grad/param", "TP overlap",
                  "ZeRO-3 gathers", "cross-entropy", "loss B/logit", "quantised inputs kept", "description"]
        rows = []
        for name in catalog.names("stacks"):
            s = stack_profile(name)
            rows.append([name, s.attention, s.kernels, YES[s.autocast], s.grad_reduce,
                         f"{YES[s.overlap_grad_reduce]}/{YES[s.overlap_param_gather]}", YES[s.tp_comm_overlap],
                         s.sharded_gather, s.cross_entropy, f"{s.loss_bytes_per_logit:g}",
                         YES[s.quantised_inputs_kept], catalog.table("stacks")[name]["description"]])
        return header, rows
    if kind == "engines":
        return _engine_rows()
    header = ["name", "params", "layers", "hidden", "heads", "kv heads", "ffn", "vocab", "activation", "position",
              "experts"]
    rows = []
    for name in catalog.names("models"):
        m = model_spec(name)
        experts = f"{m.experts} (top {m.top_k})" if m.is_moe else "-"
        rows.append([name, f"{m.params / 1e9:.1f}B", str(m.layers), str(m.hidden), str(m.heads), str(m.kv_heads),
                     str(m.ffn_hidden), str(m.vocab), m.activation, m.position, experts])
    return header, rows


def _engine_rows() -> tuple[list[str], list[list[str]]]:
    """The serving engine profiles: their scheduler defaults and per-iteration costs (catalog engines.yaml)."""
    from twin.serving.profiles import engine_profile, profile_names

    header = ["name", "max batch", "tokens/iteration", "chunked prefill", "prompts with decodes", "prefix cache",
              "scheduler", "CUDA graphs", "host/iteration", "sampler bytes/slot/vocab", "description"]
    rows = []
    for name in profile_names():
        e = engine_profile(name)
        graphs = f"up to {e.graph_max_batch}" if e.cuda_graphs else "no"
        host = "calibrated" if e.host_s is None else f"{e.host_s * 1e3:g} ms"
        if e.overlap_scheduler:
            host += " (overlapped)"
        rows.append([name, str(e.max_batch), str(e.max_tokens_in_flight), YES[e.chunked_prefill],
                     e.prefill_with_decode, YES[e.prefix_cache], e.scheduler, graphs, host,
                     f"{e.decoder_bytes_per_logit:g}",
                     catalog.table("engines")[name]["description"]])
    return header, rows
