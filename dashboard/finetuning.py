"""The Scenario page's fine-tuning knobs: the training method and the storage of the base, written into
the scenario text (free of Streamlit).

``training.method`` picks full training, LoRA or QLoRA; ``training.weights`` the storage of the frozen
base (QLoRA always stores it in nf4; full training keeps 16 bits, or fp8 under fp8 precision).
docs/scenario.md documents both keys.
"""

from __future__ import annotations

from typing import Any

from dashboard.core import parse_yaml, to_yaml
from twin.api import METHODS, WEIGHT_STORAGES

DEFAULT = "as the precision"        # the weights key left out: 16 bits (fp32 for fp32 training)
WEIGHTS = {"full": (DEFAULT, "fp8"), "lora": (DEFAULT, *WEIGHT_STORAGES), "qlora": ("nf4",)}


def current(text: str, source: str) -> tuple[str, str]:
    """(method, weights) a scenario text asks for."""
    training = parse_yaml(text, source).get("training") or {}
    method = training.get("method", "full")
    weights = training.get("weights") or ("nf4" if method == "qlora" else DEFAULT)
    return str(method), str(weights)


def weight_choices(method: str) -> tuple[str, ...]:
    return WEIGHTS.get(method, (DEFAULT,))


def with_method(text: str, source: str, method: str, weights: str) -> str:
    """The scenario text with ``training.method`` and ``training.weights`` set (comments are not kept).

    A storage the method does not allow is dropped (the method's default applies); adapters
    (``training.lora``) go when the method trains every weight.
    """
    raw: dict[str, Any] = parse_yaml(text, source)
    training = raw.setdefault("training", {})
    if not isinstance(training, dict):
        return text
    if method == "full":
        training.pop("method", None)
        training.pop("lora", None)
    else:
        training["method"] = method
    if weights in weight_choices(method) and weights != DEFAULT and method != "qlora":
        training["weights"] = weights
    else:
        training.pop("weights", None)
    return to_yaml(raw)

