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
