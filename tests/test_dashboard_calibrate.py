"""The Calibrate page (AppTest, no browser) and its logic: dropped logs fitted, a run's drift from its twin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard import calibrate  # noqa: E402
from tests import site_logs  # noqa: E402
from tests.test_calibrate import write_site  # noqa: E402

APP = str(ROOT / "dashboard" / "app.py")


@pytest.mark.parametrize("scenario", ["superpod.yaml", "serve-llama70b-h100.yaml"])
def test_the_calibrate_page_draws_cleanly_before_any_log_is_dropped(scenario):
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["page"] = "calibrate"
    at.session_state["scenario_file"] = scenario
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Calibrate"
    assert any("site profile" in c.value for c in at.caption)


def test_dropped_logs_give_fits_against_the_catalog_and_a_run_its_drift(tmp_path):
    folder = write_site(tmp_path / "logs")
    files = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    fitted = calibrate.calibrate(files)
    assert fitted["error"] is None, fitted["error"]
    rows = {r["parameter"]: r for r in calibrate.fit_rows(fitted["profile"])}
    assert rows["network"]["change"] == "-20.0%" and rows["matmul"]["change"] == "-10.0%"
    raw = yaml.safe_load((ROOT / "scenarios" / "superpod.yaml").read_text())
    log = ("train.log", site_logs.megatron_log(3.0, 4).encode())
    found = calibrate.compare(raw, log, fitted["path"])
    assert found["error"] is None, found["error"]
    assert calibrate.drift_rows(found["drift"])[0][""] == "iteration time"


def test_a_bad_dropped_log_is_named_as_the_user_named_it():
    fitted = calibrate.calibrate([("notes.txt", b"nothing a tool wrote\n")])
    assert fitted["profile"] is None
    assert fitted["error"].startswith("notes.txt:1:"), fitted["error"]
