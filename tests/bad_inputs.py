"""A corpus of malformed and extreme scenarios, as a new user (or a script) would write them.

Each case is (id, file bytes, key path the one-line error must name or None for a
file-level problem). ``valid_extremes`` are scenarios at the edge of the limits
that must run to an answer (exit 0), quickly.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import yaml

BASE: dict[str, Any] = {
    "name": "boundary",
    "cluster": {"node": "dgx-h100", "nodes": 2, "storage": {"read": "40 GB/s", "write": "30 GB/s"}},
    "site": {"country": "FR", "pue": 1.2, "compare": ["DE"]},
    "training": {"model": "llama2-7b", "tokens": "10B", "seq_len": 4096, "global_batch": 64,
                 "parallelism": {"tensor": 1, "pipeline": 1}},
}
INLINE_MODEL = {"layers": 4, "hidden": 1024, "heads": 16, "vocab": 32000}


def dump(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8")


def with_value(path: str, value: Any, base: dict | None = None) -> dict:
    data = copy.deepcopy(base or BASE)
    node = data
    *parents, last = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return data


def without(path: str) -> dict:
    data = copy.deepcopy(BASE)
    node = data
    *parents, last = path.split(".")
    for part in parents:
        node = node[part]
    del node[last]
    return data


# Numeric keys and values that no limit admits. Unit-bearing keys get the values as strings with a unit too.
NUMBER_KEYS = {
    "cluster.nodes": "", "cluster.spare_nodes": "", "cluster.nodes_per_rack": "", "cluster.rack_power_limit": " W",
    "cluster.gpu_power_cap": " W", "cluster.fabric.link": " Gb/s", "cluster.fabric.oversubscription": "",
    "cluster.fabric.nodes_per_su": "", "cluster.storage.read": " GB/s", "cluster.storage.write": " GB/s",
    "cluster.storage.capacity": " TB", "site.pue": "", "site.carbon_intensity": " g/kWh",
    "site.embodied.gpu_kg": "", "site.embodied.lifetime_years": "", "site.embodied.utilization": "",
    "training.tokens": "", "training.seq_len": "", "training.global_batch": "",
    "training.parallelism.tensor": "", "training.parallelism.pipeline": "", "training.parallelism.data": "",
    "training.parallelism.microbatch": "", "training.parallelism.virtual_stages": "",
    "training.parallelism.zero": "", "training.checkpoint.interval": " s", "failures.samples": "",
    "failures.rate_scale": "", "failures.detection_time": " s", "failures.restart_time": " h",
    "failures.repair_time": " h", "failures.horizon": " d", "failures.seed": "", "efficiency.matmul": "",
}
BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1, 1e30, "abc", True, [1]]


def bad_number_cases() -> list[tuple[str, bytes, str]]:
    cases = []
    for path, unit in NUMBER_KEYS.items():
        for value in BAD_NUMBERS:
            cases.append((f"{path}={value!r}", dump(with_value(path, value)), path))
        if unit:
            for text in ("nan", "inf", "-5", "1e400"):
                cases.append((f"{path}='{text}{unit}'", dump(with_value(path, f"{text}{unit}")), path))
    return cases


def inline_model_cases() -> list[tuple[str, bytes, str]]:
    where = "training.model"
    bad = [
        ({"heads": 15}, "heads"), ({"kv_heads": 3}, "kv_heads"), ({"kv_heads": 32}, "kv_heads"),
        ({"experts": 1, "top_k": 2}, "top_k"), ({"experts": 4, "top_k": 8}, "top_k"), ({"layers": 0}, "layers"),
        ({"hidden": "wide"}, "hidden"), ({"vocab": math.inf}, "vocab"), ({"activation": "relu"}, "activation"),
        ({"layers": 2.5}, "layers"), ({"heads": None}, "heads"), ({"colour": "blue"}, "colour"),
        ({"hidden": 10**12}, "hidden"), ({"name": "x" * 500}, "name"), ({"tied_embeddings": "yes"}, "tied_embeddings"),
        ({"position": "sinusoidal"}, "position"),
    ]
    cases = [(f"inline {change}", dump(with_value(where, INLINE_MODEL | change)), f"{where}.{key}")
             for change, key in bad]
    missing = dict(INLINE_MODEL)
    del missing["vocab"]
    cases.append(("inline without vocab", dump(with_value(where, missing)), f"{where}.vocab"))
    cases.append(("model as a list", dump(with_value(where, ["llama2-7b"])), where))
    cases.append(("model as a number", dump(with_value(where, 7)), where))
    return cases


def meaning_cases() -> list[tuple[str, bytes, str]]:
    """Values of the right type that do not make sense, alone or together."""
    single = {**BASE, "cluster": {"node": "dgx-h100", "nodes": 2, "fabric": {"topology": "single-switch",
                                                                          "oversubscription": 2}}}
    return [
        ("negative electricity price", dump(with_value("site.electricity_price", "-0.1 EUR/kWh")),
         "site.electricity_price"),
        ("absurd electricity price", dump(with_value("site.electricity_price", "1e9 EUR/kWh")),
         "site.electricity_price"),
        ("electricity price without currency", dump(with_value("site.electricity_price", 0.1)),
         "site.electricity_price"),
        ("negative GPU-hour price", dump(with_value("site.gpu_hour_price", "-2 USD/GPU-h")), "site.gpu_hour_price"),
        ("price per GPU-hour as nan", dump(with_value("site.gpu_hour_price", "nan USD/GPU-h")), "site.gpu_hour_price"),
        ("hardware price of a trillion", dump(with_value("site.hardware_price", "1e12 USD",
                                                         with_value("site.pricing", "owned"))), "site.hardware_price"),
        ("maintenance above the price", dump(with_value("site.maintenance", 1.5, with_value("site.pricing", "owned"))),
         "site.maintenance"),
        ("spares equal nodes", dump(with_value("cluster.spare_nodes", 2)), "cluster.spare_nodes"),
        ("single switch oversubscribed", dump(single), "cluster.fabric.oversubscription"),
        ("virtual stages under 1f1b", dump(with_value("training.parallelism", {"pipeline": 2, "virtual_stages": 2,
                                                                                 "schedule": "1f1b"})),
         "training.parallelism.virtual_stages"),
        ("autocast in fp32", dump(with_value("training.autocast", True, with_value("training.precision", "fp32"))),
         "training.autocast"),
        ("unknown node", dump(with_value("cluster.node", "dgx-h10")), "cluster.node"),
        ("unknown model", dump(with_value("training.model", "llama2-70")), "training.model"),
        ("unknown country", dump(with_value("site.country", "XX")), "site.country"),
        ("unknown compared country", dump(with_value("site.compare", ["DE", "Frankreich"])), "site.compare[1]"),
        ("too many compared countries", dump(with_value("site.compare", ["DE"] * 60)), "site.compare"),
        ("unknown failure profile", dump(with_value("failures", {"enabled": True, "profile": "llama3-h10"})),
         "failures.profile"),
        ("unknown failure component", dump(with_value("failures", {"enabled": True,
                                                                     "custom_rates": {"faulty-gpus": 1e-5}})),
         "failures.custom_rates.faulty-gpus"),
        ("negative custom rate", dump(with_value("failures", {"enabled": True, "custom_rates": {"faulty-gpu": -1}})),
         "failures.custom_rates.faulty-gpu"),
        ("unknown efficiency", dump(with_value("efficiency", {"matmull": 0.8})), "efficiency"),
        ("unknown top-level key", dump({**BASE, "trainnig": {}}), "trainnig"),
        ("unknown nested key", dump(with_value("cluster.spare_node", 3)), "cluster.spare_node"),
        ("no workload", dump({k: v for k, v in BASE.items() if k != "training"}), ""),
        ("no cluster", dump({k: v for k, v in BASE.items() if k != "cluster"}), "cluster"),
        ("training is a list", dump(with_value("training", [1, 2])), "training"),
        ("cluster is a string", dump(with_value("cluster", "dgx")), "cluster"),
        ("tokens missing", dump(without("training.tokens")), "training.tokens"),
        ("bad precision", dump(with_value("training.precision", "bf17")), "training.precision"),
        ("fp8 on an A100", dump(with_value("training.precision", "fp8", with_value("cluster.node", "dgx-a100-80gb"))),
         "training.precision"),
        ("tensor not dividing heads", dump(with_value("training.parallelism.tensor", 6)),
         "training.parallelism.tensor"),
        ("pipeline deeper than the model", dump(with_value("training.parallelism.pipeline", 64)),
         "training.parallelism.pipeline"),
        ("plan larger than the cluster", dump(with_value("training.parallelism.data", 64)),
         "training.parallelism.data"),
        ("microbatch not dividing batch", dump(with_value("training.parallelism.microbatch", 7)),
         "training.parallelism.microbatch"),
        ("boolean for a flag as text", dump(with_value("failures.enabled", "yes please")), "failures.enabled"),
        ("unit in the wrong dimension", dump(with_value("cluster.fabric.link", "400 kg")), "cluster.fabric.link"),
        ("bytes for a bandwidth", dump(with_value("cluster.storage.read", "40 GB")), "cluster.storage.read"),
        ("power cap below idle", dump(with_value("cluster.gpu_power_cap", "60 W")), "cluster.gpu_power_cap"),
        ("name not text", dump(with_value("name", ["a"])), "name"),
        ("very long name", dump(with_value("name", "n" * 5000)), "name"),
        ("very long unknown key", dump(with_value("k" * 5000, 1)), "k"),
        ("control characters in a key", dump(with_value("cluster.no\x1ede\u2028s", 1)), "cluster.no\\x1ede"),
        ("embodied llmcarbon without die area", dump(with_value("site.embodied", {"enabled": True,
                                                                                 "method": "llmcarbon"},
                                                                with_value("cluster.node", "l4-8"))),
         "site.embodied.method"),
    ]


def file_cases() -> list[tuple[str, bytes, str | None]]:
    text = dump(BASE).decode("utf-8")
    nested = "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(100)) + "  " * 101 + "x: 1\n"
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8))
    return [
        ("latin-1 text", text.replace("boundary", "cafe\u0301").encode("utf-8").replace(b"e\xcc\x81", b"\xe9"), None),
        ("UTF-16 with BOM", text.encode("utf-16"), None),
        ("UTF-16 without BOM", text.encode("utf-16-le"), None),
        ("UTF-32", text.encode("utf-32"), None),
        ("binary", bytes(range(256)) * 4, None),
        ("PNG header", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, None),
        ("empty file", b"", None),
        ("only a comment", b"# nothing here\n", None),
        ("a list", b"- cluster\n- training\n", None),
        ("a number", b"42\n", None),
        ("deeply nested mapping", nested.encode(), None),
        ("deeply nested list", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", None),
        ("repeated top-level key", (text + "cluster: {node: dgx-a100-80gb, nodes: 4}\n").encode(), "cluster"),
        ("repeated nested key", text.replace("nodes: 2", "nodes: 2\n  nodes: 4").encode(), "cluster.nodes"),
        ("billion laughs", laughs.encode(), None),
        ("recursive alias", b"a: &a [*a]\n", None),
        ("two documents", (text + "---\n" + text).encode(), None),
        ("bad indentation", b"cluster:\n  node: dgx-h100\n nodes: 2\n", None),
        ("tab indentation", b"cluster:\n\tnode: dgx-h100\n", None),
        ("unclosed quote", b"name: \"open\ncluster: {}\n", None),
        ("unhashable key", b"? [1, 2]\n: 3\n", None),
        ("python object tag", b"name: !!python/object:os.system 'ls'\n", None),
        ("too large", b"# " + b"x" * (2 << 20) + b"\n", None),
        ("very long line of YAML", ("name: " + "y" * 100_000 + "\n").encode(), "name"),
    ]


def all_cases() -> list[tuple[str, bytes, str | None]]:
    return file_cases() + bad_number_cases() + inline_model_cases() + meaning_cases()


def valid_extremes() -> list[tuple[str, dict]]:
    """At the edge of the limits: must answer (exit 0), possibly with a warning."""
    failures = {"enabled": True, "samples": 3}
    one_node = with_value("cluster.nodes", 1)
    return [
        ("one node", one_node),
        ("slowest link", with_value("cluster.fabric.link", "1 Gb/s")),
        ("slowest storage with failures",
         with_value("failures", failures, with_value("cluster.storage", {"read": "100 MB/s", "write": "100 MB/s"}))),
        ("longest restart, most failures",
         with_value("failures", failures | {"rate_scale": 100, "restart_time": "7 d", "repair_time": "365 d"})),
        ("most tokens on one node with failures",
         with_value("failures", failures, with_value("training.tokens", "1000T", one_node))),
        ("most tokens without failures", with_value("training.tokens", "1000T")),
        ("longest sequence", with_value("training.seq_len", 16777216, with_value("training.global_batch", 16))),
        ("largest batch", with_value("training.global_batch", 16777216)),
        ("highest PUE", with_value("site.pue", 4)),
        ("free electricity", with_value("site.electricity_price", "0 EUR/kWh")),
        ("quoted numbers", with_value("site.pue", "1.3", with_value("cluster.fabric.oversubscription", "2"))),
        ("numbers written with units as strings", with_value("training.tokens", "1e10")),
        ("largest failure samples", with_value("failures", {"enabled": True, "samples": 1000})),
        ("shortest horizon", with_value("failures", failures | {"horizon": "2 h"})),
        ("spares held back", with_value("cluster.spare_nodes", 1)),
    ]


# -- the sections and front ends added since: serving, jobs, traces and every command's flags ------------

SERVE: dict[str, Any] = {
    "name": "boundary serving",
    "cluster": {"node": "dgx-h100", "nodes": 1},
    "site": {"country": "FR"},
    "serving": {"model": "llama3-8b", "replicas": 2, "load": {"rate": "5/s", "requests": 100,
                                                              "input_tokens": {"mean": 256},
                                                              "output_tokens": {"mean": 64}}},
}
TEMPLATE = {"model": "llama2-7b", "tokens": "1B", "seq_len": 4096, "global_batch": 64, "parallelism": {"tensor": 1}}
JOBS: dict[str, Any] = {
    "name": "boundary jobs",
    "cluster": {"node": "dgx-h100", "nodes": 4},
    "site": {"country": "FR"},
    "jobs": {"templates": {"t": TEMPLATE},
             "generator": {"jobs": 10, "rate": "1/h", "gpus": {8: 1}, "duration": {"median": "1 h"}}},
}
# 100,000 jobs at one a minute on 32 GPUs: within every key's limit, but the queue grows without bound.
OVERLOAD = {"jobs": 100_000, "rate": "1/min", "gpus": {8: 1}, "duration": {"median": "1 h"}}


def section_cases() -> list[tuple[str, bytes, str | None]]:
    """Serving and jobs sections, and integers no key allows, each refused in one line naming the key."""
    never = copy.deepcopy(JOBS)
    never["jobs"]["templates"]["big"] = {**TEMPLATE, "model": "llama2-70b", "parallelism": {"tensor": 8, "pipeline": 4}}
    never["jobs"]["mix"] = {"t": 1, "big": 1}
    digits = dump(BASE).decode().replace("nodes: 2", "nodes: " + "9" * 5000).encode()
    return [
        ("empty MIG profile", dump(with_value("serving.mig", "", SERVE)), "serving.mig"),
        ("blank MIG profile of an alternative", dump(with_value("serving.compare", [{"mig": " "}], SERVE)),
         "serving.compare[0].mig"),
        ("zero replicas", dump(with_value("serving.replicas", 0, SERVE)), "serving.replicas"),
        ("a million requests", dump(with_value("serving.load.requests", 10**6, SERVE)), "serving.load.requests"),
        ("rate past the limit", dump(with_value("serving.load.rate", "1e12/s", SERVE)), "serving.load.rate"),
        ("generator whose queue grows without bound", dump(with_value("jobs.generator", OVERLOAD, JOBS)),
         "jobs.generator"),
        ("template that never runs", dump(never), "jobs.mix.big"),
        ("generator of a million jobs", dump(with_value("jobs.generator.jobs", 10**6, JOBS)), "jobs.generator.jobs"),
        ("5,000-digit integer", digits, "cluster.nodes"),
        ("5,000-digit integer in a job", dump(with_value("jobs.seed", 12345, JOBS)).replace(b"12345", b"9" * 5000),
         "jobs.seed"),
    ]


TRACE_HEADER = "submit_s,gpus,duration_s"


def trace_cases() -> list[tuple[str, bytes]]:
    """Trace files (``jobs.trace``) that must be refused in one line naming jobs.trace."""
    h = TRACE_HEADER
    return [
        ("field over 131,072 characters", f"name,{h}\n{'x' * 200_000},0,8,3600\n".encode()),
        ("row shorter than its header", f"{h}\n0,8\n".encode()),
        ("priority 1e300", f"{h},priority\n0,8,3600,1e300\n".encode()),
        ("submit_s 1e300", f"{h}\n1e300,8,3600\n".encode()),
        ("duration_s 1e300", f"{h}\n0,8,1e300\n".encode()),
        ("GPUs past the largest cluster", f"{h}\n0,1000000,3600\n".encode()),
        ("5,000-digit GPUs", f"{h}\n0,{'9' * 5000},3600\n".encode()),
        ("not UTF-8", f"{h}\n0,8,3600\n".encode() + b"\xff\xfe\n"),
        ("only comments", b"# nothing\n"),
        ("unknown column", f"{h},colour\n0,8,3600,red\n".encode()),
        ("more rows than allowed", (h + "\n" + "0,8,3600\n" * 100_001).encode()),
    ]


HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def helios_cases() -> list[tuple[str, bytes]]:
    """Helios sources ``convert-trace`` must refuse in one line naming the source."""
    row = "j1,u,vc1,8,8,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:05,2020-04-01 01:00:05,3600,5"
    return [
        ("row shorter than its header", f"{HELIOS_HEADER}\nj1,u,vc1,8\n".encode()),
        ("field over 131,072 characters", f"{HELIOS_HEADER}\n{'j' * 200_000}{row[2:]}\n".encode()),
        ("binary", bytes(range(256)) * 8),
        ("not Helios", b"a,b,c\n1,2,3\n"),
        ("GPUs 1e300", f"{HELIOS_HEADER}\n{row.replace(',8,8,', ',1e300,8,')}\n".encode()),
        ("date not a date", f"{HELIOS_HEADER}\n{row.replace('2020-04-01 00:00:00', 'yesterday')}\n".encode()),
    ]


def flag_cases(d: str) -> list[tuple[str, list[str], str]]:
    """(id, argv, the flag the one-line error names) for every command; ``d`` holds base.yaml and serve.yaml
    (``BASE`` and ``SERVE``) and trace.csv (a trace in the twin's format)."""
    base, serve, trace = f"{d}/base.yaml", f"{d}/serve.yaml", f"{d}/trace.csv"
    sweep = ["sweep", base, "--closed-form"]
    return [
        ("plan --refine -5", ["plan", base, "--refine", "-5"], "--refine"),
        ("plan --top 0", ["plan", base, "--top", "0"], "--top"),
        ("plan --top of 5,000 digits", ["plan", base, "--top", "9" * 5000], "--top"),
        ("deadline without a unit", ["plan", base, "--constraint", "deadline=30"], "--constraint"),
        ("negative deadline", ["plan", base, "--constraint", "deadline=-5d"], "--constraint"),
        ("zero power", ["plan", base, "--constraint", "power=0W"], "--constraint"),
        ("infinite cost", ["plan", base, "--constraint", "cost=1e400 EUR"], "--constraint"),
        ("capacity --rate 1e12/s", ["capacity", serve, "--rate", "1e12/s"], "--rate"),
        ("capacity --rate 0/s", ["capacity", serve, "--rate", "0/s"], "--rate"),
        ("fit --top -1", ["fit", base, "--top", "-1"], "--top"),
        ("fit --nodes ,", ["fit", base, "--nodes", ","], "--nodes"),
        ("fit --max-gpus 0", ["fit", base, "--max-gpus", "0"], "--max-gpus"),
        ("convert-trace onto its source", ["convert-trace", "helios", trace, trace], "target"),
        ("convert-trace /dev/zero", ["convert-trace", "helios", "/dev/zero", f"{d}/out.csv"], "source"),
        ("convert-trace unknown format", ["convert-trace", "alibaba", trace, f"{d}/out.csv"], "format"),
        ("--vary of 5,000 digits", [*sweep, "--vary", "cluster.nodes=" + "9" * 5000], "--vary"),
        ("--vary range to infinity", [*sweep, "--vary", "site.pue=0..1e400"], "--vary"),
        ("--vary range that overflows", [*sweep, "--vary", "site.pue=1e308..1e309:1e307"], "--vary"),
        ("--vary step that is 0", [*sweep, "--vary", "site.pue=1..2:1e-400"], "--vary"),
        ("four --vary of a million", [*sweep, *(x for k in ("site.pue", "cluster.nodes", "failures.seed",
                                                            "training.seq_len") for x in ("--vary", f"{k}=1..1000000"))],
         "--vary"),
        ("--workers past the cores", [*sweep, "--vary", "site.pue=1.1,1.2", "--workers", "100000"], "--workers"),
        ("--workers 0", [*sweep, "--vary", "site.pue=1.1,1.2", "--workers", "0"], "--workers"),
        ("--scheduler not a url", [*sweep, "--vary", "site.pue=1.1,1.2", "--scheduler", "not a url"],
         "--scheduler"),
        ("--max-points -1", [*sweep, "--vary", "site.pue=1.1,1.2", "--max-points", "-1"], "--max-points"),
        ("validate --cases on a binary file", ["validate", "--cases", "/bin/sh"], "--cases"),
        ("validate --cases on a device", ["validate", "--cases", "/dev/zero"], "--cases"),
        ("unknown command", ["frobnicate"], "command"),
        ("missing scenario", ["run"], "the following arguments are required"),
        ("unknown flag", ["run", base, "--bogus"], "unrecognized arguments"),
        ("bad choice", ["catalog", "cars"], "kind"),
    ]
