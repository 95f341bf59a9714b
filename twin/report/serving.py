"""The terminal summary of a serving record (``ServingResult.to_dict()``): one deployment over the load and
the deployments it is compared with."""

from __future__ import annotations

from typing import Any

from twin.formatting import fmt_co2e_kg, fmt_energy_kwh, fmt_money_eur
from twin.report.format import ms, rate, slo, table, triple
from twin.units import fmt_bytes, fmt_si


def _memory_lines(r: dict[str, Any]) -> list[str]:
    """The deployment, memory per GPU, the KV cache and the load."""
    d, bd = r["deployment"], r["memory_breakdown_bytes"]
    out = [f"Deployment    {r['label']}; {r['gpus_used']:,} of {r['gpus_total']:,} GPUs used"]
    fit = "fits" if r["memory_fits"] else "DOES NOT FIT"
    grace = bd["weights_grace"] + bd["kv_cache_grace"]
    out.append(f"Memory/GPU    {fmt_bytes(r['memory_per_gpu_bytes'])} of {fmt_bytes(r['memory_capacity_bytes'])} "
               f"— {fit} (weights {fmt_bytes(bd['weights'])}, reserve {fmt_bytes(bd['reserve'])}, "
               f"KV cache {fmt_bytes(bd['kv_cache'])}" + (f", Grace memory {fmt_bytes(grace)}" if grace else "") + ")")
    out.append(f"KV cache      {r['kv_cache_capacity_tokens']:,} tokens per replica "
               f"({fmt_bytes(r['kv_bytes_per_token'])} per token per GPU, {d['kv_cache']})")
    out.append(f"Load          {rate(r['rate_per_s'])}; SLO {slo(r['slo'])}")
    return out


def _verdict(r: dict[str, Any]) -> str:
    """The SLO over the run, and whether the offered rate is sustained (``sustained``: not above the rate the
    deployment completes when saturated)."""
    return ("met" if r["slo_met"] else "NOT met") + (", not sustained" if r["sustained"] is False else "")


def _run_lines(r: dict[str, Any]) -> list[str]:
    """Throughput, latency, the SLO, the engine and power of a deployment that ran."""
    out = [f"Throughput    {r['requests_per_s']:,.2f} requests/s, {r['output_tokens_per_s']:,.0f} output tokens/s, "
           f"{r['tokens_per_s']:,.0f} tokens/s in and out"]
    out.append(f"Latency       P50 / P90 / P99: TTFT {triple(r['ttft_s'])}; TPOT {triple(r['tpot_s'])}; "
               f"end to end {triple(r['e2e_latency_s'])}")
    out.append(f"SLO           {_verdict(r)}" + ("" if r["sustained"] is not False else
               f": {r['rate_per_s']:.3g} requests/s is more than the {r['saturated_requests_per_s']:.3g} "
               "requests/s it completes when saturated, so a queue that builds never drains"))
    e = r["engine"]
    out.append(f"Engine        {e['iterations']:,} iterations ({e['clock_advances']:,} clock advances); up to "
               f"{e['max_running']:,} sequences in flight; busy {e['busy_fraction']:.0%}; "
               f"{e['preemptions']:,} preemptions")
    p = r["power"]
    out.append(f"Power (IT)    average {fmt_si(r['avg_power_it_w'], 'W')} (GPU {p['gpu_avg_w']:.0f} W"
               + (" per MIG instance" if r["deployment"]["mig"] else "") + ")")
    out.append(f"Per million   {fmt_energy_kwh(r['energy_per_million_output_tokens_kwh'])} facility "
               f"({fmt_energy_kwh(r['energy_per_million_output_tokens_it_kwh'])} IT × PUE {r['pue']:.2f}) per million "
               "output tokens" + (f"; GPU rental {fmt_money_eur(p['rental_per_million_output_tokens_eur'])}"
                                  if p["rental_per_million_output_tokens_eur"] is not None else ""))
    c = r.get("cost_eur")
    if c and c["per_million_input_tokens"] is not None:
        out.append(f"Cost          {fmt_money_eur(c['per_million_input_tokens'])} per million input tokens, "
                   f"{fmt_money_eur(c['per_million_output_tokens'])} per million output tokens at the site "
                   f"({' + '.join(c['includes'])}; GPU time split by prefill and decode work)")
    for a in r.get("api_comparison") or []:
        api, own = a["api_eur_per_million_output_tokens"], a["self_hosted_eur_per_million_output_tokens"]
        winner = "self-hosting" if a["cheaper"] == "self-hosted" else "the API"
        out.append(f"API           {a['api']} ({a['date']}): {fmt_money_eur(api)} per million output tokens of this "
                   f"mix against {fmt_money_eur(own)} self-hosted: {winner} is cheaper at this rate")
    return out


def _country_rows(r: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in r["power"]["countries"]:
        cost = r["cost_per_million_output_tokens_eur"].get(c["code"])
        rows.append([c["code"] + (" (site)" if c["code"] == r["country"] else ""),
                     f"{c['intensity_g_per_kwh']:.0f} g CO2e/kWh",
                     fmt_co2e_kg(r['carbon_per_million_output_tokens_kg'][c['code']]), fmt_money_eur(cost)])
    return rows


def serving_lines(r: dict[str, Any]) -> list[str]:
    """One deployment's lines: memory and load, and when it ran, its numbers and costs per country."""
    out = _memory_lines(r)
    if r["requests_per_s"] is None:
        return out
    header = ["country", "intensity", "carbon per M output tokens", "cost per M output tokens"]
    return out + _run_lines(r) + ["", table(_country_rows(r), header)]


def _comparison_row(r: dict[str, Any]) -> list[str]:
    site = r["country"]
    if r["requests_per_s"] is None:
        return [r["label"], f"{r['gpus_used']:,}", "does not fit", "", "", "", "", "", ""]
    cost = r["cost_per_million_output_tokens_eur"].get(site)
    return [r["label"], f"{r['gpus_used']:,}", f"{r['output_tokens_per_s']:,.0f}", ms(r["ttft_s"]["p99"]),
            ms(r["tpot_s"]["p99"]), _verdict(r),
            fmt_energy_kwh(r['energy_per_million_output_tokens_kwh']), fmt_money_eur(cost),
            fmt_co2e_kg(r['carbon_per_million_output_tokens_kg'][site])]


def serving_summary(record: dict[str, Any]) -> str:
    """The terminal summary of a serving record (``ServingResult.to_dict()``)."""
    r = record
    out = [f"twin — {r['scenario']}", ""]
    out += serving_lines(r)
    alternatives = r.get("alternatives") or []
    if alternatives:
        out += ["", "Compared deployments (the same model and load)", ""]
        out.append(table([_comparison_row(x) for x in [r, *alternatives]],
                         ["deployment", "GPUs", "output tok/s", "p99 TTFT", "p99 TPOT", "SLO",
                          "energy/M tok", f"cost/M tok ({r['country']})", f"carbon/M tok ({r['country']})"]))
    for w in [*r["warnings"], *(w for x in alternatives for w in x["warnings"])]:
        out.append(f"warning: {w}")
    return "\n".join(out)
