"""Measure how fast the dashboard answers a knob change (server side, as Streamlit reruns the script).

    python dashboard/latency.py [--scenario superpod.yaml]

Loads the scenario, then moves knobs one at a time on each page and prints the
rerun time: a value never seen before (a fresh simulation) and a value seen
before (answered from ``st.cache_data``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PAGES = ("overview", "cluster", "step", "job", "compare")


def main(argv: list[str] | None = None) -> int:
    from streamlit.testing.v1 import AppTest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="superpod.yaml")
    args = parser.parse_args(argv)

    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=120)
    at.session_state["scenario_file"] = args.scenario
    start = time.perf_counter()
    at.run()
    print(f"first load (cold caches): {time.perf_counter() - start:.2f} s")

    def widget(kind: str, label: str):
        return next(w for w in getattr(at.sidebar, kind) if w.label.startswith(label))

    nodes0 = widget("number_input", "Nodes").value
    country0 = widget("text_input", "Country").value
    batch0 = widget("number_input", "Global batch").value
    countries = iter(c for c in ("DE", "US", "SE", "PL", "GB", "NO", "FR") if c != country0)
    rows: dict[tuple[str, str], list[float]] = {}
    for i, page in enumerate(PAGES):
        at.sidebar.radio(key="page").set_value(page)
        at.run()
        moves = [("Nodes", "number_input", nodes0 + 1 + i, "new"), ("Nodes", "number_input", nodes0, "cached"),
                 ("Country", "text_input", next(countries), "new"), ("Country", "text_input", country0, "cached"),
                 ("Global batch", "number_input", batch0 + 8 * (i + 1), "new"),
                 ("Global batch", "number_input", batch0, "cached")]
        for label, kind, value, state in moves:
            widget(kind, label).set_value(value)
            start = time.perf_counter()
            at.run()
            elapsed = time.perf_counter() - start
            assert not at.exception, [e.value for e in at.exception]
            assert not at.sidebar.error, [e.value for e in at.sidebar.error]
            rows.setdefault((page, state), []).append(elapsed)
            print(f"{page:9s} {label:8s} -> {value!s:6s} ({state:6s}) {elapsed:6.2f} s")
    worst = max(t for times in rows.values() for t in times)
    print()
    for (page, state), times in rows.items():
        print(f"{page:9s} {state:6s} median {statistics.median(times):.2f} s, max {max(times):.2f} s")
    print(f"worst knob change: {worst:.2f} s")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
