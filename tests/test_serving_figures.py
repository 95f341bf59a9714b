"""The Serving page's figures and tables: the SLO label on a log axis, every deployment's tokens/s per GPU
against tokens/s per user, changes against the scenario as written, and warnings in words."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from twin.figures import serving

RECORD = Path(__file__).parent / "data" / "records" / "serve-8b-l4-vs-mig.json.gz"


def _point(rate: float, tok_s: float, tpot_p50: float, requests: int = 1000) -> dict:
    return {"rate_per_s": rate, "requests": requests, "requests_per_s": rate, "output_tokens_per_s": tok_s,
            "slo_met": True, "ttft_s": {"p50": 0.1, "p90": 0.2, "p99": 0.3},
            "tpot_s": {"p50": tpot_p50, "p90": 0.05, "p99": 0.06}}


def _capacity() -> dict:
    """Two deployments: 8 GPUs, and 4 MIG instances of one GPU (a quarter of a GPU each)."""
    main = {"label": "8 on L4", "replicas": 8, "gpus_per_replica": 1.0, "slo": {"ttft_p99_s": 1.0, "tpot_p99_s": 0.1},
            "sweep": [_point(1.0, 800.0, 0.02), _point(4.0, 3200.0, 0.05)]}
    mig = {"label": "4 MIG", "replicas": 4, "gpus_per_replica": 0.25, "sweep": [_point(1.0, 900.0, 0.025)]}
    return main | {"alternatives": [mig]}


def test_the_slo_label_sits_at_its_line_on_the_log_axis():
    """A log axis places annotations at log10 of the value: 100 ms sits at 2, not at 100 (10^100 ms)."""
    fig = serving.latency_throughput_figure(_capacity())
    slo = [a for a in fig.layout.annotations if a.text == "SLO"]
    assert sorted(a.y for a in slo) == [math.log10(100.0), math.log10(1000.0)]


def test_each_trial_length_is_its_own_curve_and_the_scenarios_own_trials_draw_the_trade_off():
    """Trials of 1,000 and 4,000 requests (a capacity lengthened once): one curve each on both latency panels,
    named by their length; the per-GPU trade-off keeps the 1,000-request trials alone."""
    cap = _capacity()
    cap["sweep"] = cap["sweep"] + [_point(3.0, 2500.0, 0.04, requests=4000)]
    fig = serving.latency_throughput_figure(cap)
    assert sorted({t.name for t in fig.data}) == ["1,000 requests a trial", "4,000 requests a trial"]
    assert len(fig.data) == 4 and sum(t.showlegend for t in fig.data) == 2
    assert list(serving.per_gpu_per_user_figure(cap).data[0].y) == [100.0, 400.0]


def test_tokens_per_gpu_against_tokens_per_user_for_every_deployment():
    """y = output tokens/s / GPUs, x = 1 / median TPOT: 3,200 / 8 = 400 at 20 tok/s; 900 / 1 = 900 at 40."""
    fig = serving.per_gpu_per_user_figure(_capacity())
    assert [t.name for t in fig.data] == ["8 on L4", "4 MIG"]
    assert list(fig.data[0].y) == [100.0, 400.0] and list(fig.data[0].x) == [50.0, 20.0]
    assert list(fig.data[1].y) == [900.0] and list(fig.data[1].x) == [40.0]


def test_headline_changes_against_the_scenario_as_written_and_warnings_in_words():
    r = json.loads(gzip.open(RECORD).read())
    faster = r | {"output_tokens_per_s": r["output_tokens_per_s"] * 2}
    metrics = {m.label: m for m in serving.headline_metrics(faster, r)}
    assert metrics["Output tokens/s"].delta == "+100.0 %" and metrics["TTFT p99"].delta is None
    assert all(m.delta is None for m in serving.headline_metrics(r))
    words = serving.warnings_in_words(r)
    assert words and not any("serving.compare[" in w for w in words)
    assert words[0].startswith(r["alternatives"][0]["label"] + ": 7 of 8 GPUs idle")


def test_deployment_rows_put_cost_beside_the_name_without_prefixes():
    rows = serving.deployment_rows(json.loads(gzip.open(RECORD).read()))
    assert list(rows[0])[:4] == ["deployment", "GPUs", "SLO", "cost / M tok (FR)"]
    assert all(row["cost / M tok (FR)"].endswith(" EUR") and "m EUR" not in row["cost / M tok (FR)"] for row in rows)
