"""The terminal summary of ``python -m twin capacity`` (``CapacityResult.to_dict()``): the highest rate each
deployment sustains within the SLO, and the bisection that found it."""

from __future__ import annotations

from typing import Any

from twin.formatting import fmt_money_eur, fmt_number
from twin.report.format import ms, rate, slo, table


def _capacity_row(r: dict[str, Any]) -> list[str]:
    if not r["memory_fits"]:
        return [r["label"], "does not fit", "", "", "", ""] + ([""] if r["target"] else [])
    row = [r["label"], rate(r["per_replica_rate_per_s"]), rate(r["per_gpu_rate_per_s"]),
           f"{rate(r['rate_per_s'])} ({r['replicas']:,})", rate(r["offline_requests_per_s"]),
           (f"{r['requests_per_trial']:,}" + ("" if r["converged"] else " (not converged)")) if r["slo_bound"] else ""]
    t = r["target"]
    if t:
        row.append(f"{t['replicas']:,} replicas, {t['gpus']:,} GPUs"
                   + (f" ({t['devices']:,} instances)" if t["devices"] != t["gpus"] else ""))
    return row


def _api_rows(r: dict[str, Any]) -> list[list[str]]:
    """Self-hosting at capacity against each hosted API of the model (``api_comparison``)."""
    cost = r.get("cost_eur")
    if not cost:
        return []
    own = [f"{fmt_money_eur(cost['per_million_input_tokens'])} / {fmt_money_eur(cost['per_million_output_tokens'])}"]
    return [[r["label"]] + own + [
        f"{c['api']} ({c['date']})", fmt_money_eur(c["api_eur_per_million_output_tokens"]),
        fmt_money_eur(c["self_hosted_eur_per_million_output_tokens"]),
        "self-hosting" if c["cheaper"] == "self-hosted" else "the API",
        rate(c["break_even_rate_per_s"]) if c["break_even_rate_per_s"] is not None else "never"]
        for c in r.get("api_comparison") or []]


def _api_section(r: dict[str, Any]) -> list[str]:
    rows = [row for x in [r, *(r.get("alternatives") or [])] for row in _api_rows(x)]
    if not rows:
        return []
    includes = " + ".join(r["cost_eur"]["includes"]) if r.get("cost_eur") else ""
    return ["", f"Self-host or API, at capacity (cost: {includes}; per million output tokens of this workload's mix)",
            "", table(rows, ["deployment", "self-hosted per M input / output", "API (price date)", "API",
                             "self-hosted", "cheaper", "self-hosting cheaper from"])]


def capacity_summary(record: dict[str, Any]) -> str:
    """The terminal summary of ``python -m twin capacity`` (``CapacityResult.to_dict()``)."""
    r = record
    out = [f"twin capacity — {r['scenario']}", "", f"SLO           {slo(r['slo'])}"]
    rows = [_capacity_row(x) for x in [r, *(r.get("alternatives") or [])]]
    target = r["target"]
    header = ["deployment", "per replica", "per GPU", "deployment (replicas)", "offline", "SLO met over"]
    if target:
        header.append(f"for {rate(target['target_rate_per_s'])}")
    out += ["", table(rows, header)]
    out += _api_section(r)
    sweep = r["sweep"]
    if sweep:
        out += ["", f"Bisection of {r['label']}", ""]
        out.append(table([[rate(p["rate_per_s"]), f"{p['requests']:,}", fmt_number(p['output_tokens_per_s']),
                           ms(p["ttft_s"]["p99"]), ms(p["tpot_s"]["p99"]), "met" if p["slo_met"] else "not met"]
                          for p in sweep],
                         ["offered", "requests", "output tok/s", "p99 TTFT", "p99 TPOT", "SLO"]))
    for x in [r, *(r.get("alternatives") or [])]:
        out += [f"warning: {w}" for w in x["warnings"]]
    return "\n".join(out)
