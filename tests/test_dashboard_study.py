"""The dashboard's Study page: a results directory loaded, a small sweep run live, the choices in the URL."""

from __future__ import annotations

import copy
import sys

from tests.conftest import BASE, ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from twin.studies.space import space  # noqa: E402
from twin.studies.sweep import sweep  # noqa: E402

APP = str(ROOT / "dashboard" / "app.py")


def page(**state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["page"] = "study"
    at.session_state["scenario_file"] = "superpod.yaml"
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_a_loaded_study_draws_its_curves_front_and_best_points(tmp_path):
    data = copy.deepcopy(BASE)
    data["site"]["gpu_hour_price"] = "list"
    directory = tmp_path / "study"
    sweep(data, "test", space(["cluster.nodes=1,2,4", "site.country=FR,SE"]), directory, closed_form=True)
    at = page(**{"study.source": "Load a results directory", "study.dir": str(directory),
                 "study.metric": "site_total_cost_eur"})
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert [s.value for s in at.subheader] == ["Sweep curves", "Pareto front", "Best points"]
    assert len(at.get("plotly_chart")) == 2
    best = at.dataframe[0].value
    assert len(best) == 6 and list(best["cost at the site [EUR]"]) == sorted(best["cost at the site [EUR]"])
    assert best["on the front"].any()


def test_a_missing_directory_is_one_line_and_a_live_sweep_runs():
    at = page(**{"study.source": "Load a results directory", "study.dir": "/nonexistent/study"})
    assert not at.exception and at.error[0].value.startswith("'/nonexistent/study' holds no results.parquet")
    at = page(**{"study.source": "Run a small sweep of this scenario", "study.vary1": "site.country=FR,SE",
                 "study.vary2": "", "study.closed_form": True})
    at.button(key="study.run").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert "2 points over `site.country`" in at.markdown[-1].value or any(
        "2 points over `site.country`" in m.value for m in at.markdown)
    bad = page(**{"study.source": "Run a small sweep of this scenario", "study.vary1": "site.countri=FR"})
    assert not bad.error and "Press *Run the sweep*" in bad.info[0].value      # nothing runs before the button
    bad.button(key="study.run").click().run()
    assert bad.error[0].value.startswith("--vary: 'site.countri' is not a scenario key")
