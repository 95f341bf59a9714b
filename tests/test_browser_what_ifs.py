"""What-ifs in a real browser: knob changes answer within the time bound, pinned what-ifs travel in the
URL and the report downloads, a bad upload shows its one-line error (fixtures in tests/browser.py)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser import KNOB_BOUND_S, PAGES, Tab, assert_drawn_cleanly, browser, server, tab  # noqa: F401

# Its module fixtures are set up once: all its tests run on one worker (pytest-xdist).
pytestmark = pytest.mark.xdist_group("browser-what-ifs")

# scenario → knob changes (label, new value), each a what-if never simulated before
KNOB_CHANGES = {
    "superpod.yaml": [("Nodes", "120"), ("Tokens [billion]", "1500"), ("PUE [facility W / IT W]", "1.35")],
    "llama3-405b-16k.yaml": [("Nodes", "2304"), ("Tokens [billion]", "12000"), ("Global batch [sequences]", "4096")],
}


# The pages whose answer costs most to redraw: the 16K job's Monte Carlo, the serving deployments' simulation.
# (A case chooses a scenario other than the one before it: the scenario list offers the others.)
PAGE_KNOB_CHANGES = {
    ("serve-llama70b-h100.yaml", "serving"): [("Nodes", "2"), ("PUE [facility W / IT W]", "1.4"), ("Nodes", "3")],
    ("llama3-405b-16k.yaml", "job"): [("Nodes", "2200"), ("Tokens [billion]", "13000"),
                                      ("Global batch [sequences]", "4096")],
}
CASES = [(scenario, "overview", changes) for scenario, changes in KNOB_CHANGES.items()] + [
    (scenario, page, changes) for (scenario, page), changes in PAGE_KNOB_CHANGES.items()]


@pytest.mark.parametrize("scenario, page, changes", CASES, ids=[f"{s}-{p}" for s, p, _ in CASES])
def test_a_knob_change_shows_in_the_headline_in_time(tab, record_property, scenario, page, changes):
    tab.choose_scenario(scenario)
    tab.go(page)
    shown, timings = [], []
    label_of = scenario if page == "overview" else f"{scenario} ({page})"
    record_property("knob_timings", (label_of, timings))     # printed at the end of the run (conftest.py)
    for label, value in changes:
        seconds, done = tab.turn(label, value, PAGES[page])
        shown.append(seconds)
        state = tab.state()
        assert_drawn_cleanly(tab, state, f"{scenario} {label} = {value}")
        assert not state["errors"], state["errors"]
        timings.append((label, seconds, done))
    # The median change, so that one hiccup does not decide; not judged while other work crowds the cores
    # (the times are printed at the end of the run either way).
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores:
        pytest.skip(f"knob times not judged on a busy machine (load {load:.1f} on {cores} cores): "
                    + ", ".join(f"{s:.2f} s" for s in shown))
    assert sorted(shown)[len(shown) // 2] < KNOB_BOUND_S, f"{scenario}: {shown}"


def test_pinned_what_ifs_travel_in_the_url_and_the_report_downloads(tab, browser, server):
    tab.page.goto(f"{server}/?scenario_file=superpod.yaml")           # a new session: the scenario's own knobs
    tab.settle("Overview")
    tab.turn("Nodes", "64")
    tab.page.get_by_role("button", name="Pin these knobs as what-if A").click()
    tab.page.wait_for_function("() => location.search.includes('pin=')", timeout=30_000)
    query = parse_qs(urlparse(tab.page.url).query)
    assert query["nodes"] == ["64"] and query["pin"] == ["nodes:64"]

    shared = Tab(browser, f"{tab.page.url}&page=Compare")           # the page is in the URL unless it is Overview
    try:
        state = shared.settle("Compare")
        assert_drawn_cleanly(shared, state, "shared URL")
        assert shared.page.get_by_label("Nodes", exact=True).input_value() == "64"
        assert shared.page.get_by_text("A: nodes = 64").count() == 1         # the sidebar lists the pin
        with shared.page.expect_download(timeout=120_000) as download:
            shared.page.get_by_role("button", name="Download the report").first.click()
        archive = zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes()))
        text = archive.read("report.md").decode()
        assert "## Overview" in text and "## Pinned what-ifs" in text and "## Compare" in text
        linked = {line.split("](")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")}
        assert linked and linked <= set(archive.namelist())
        assert all(archive.read(name)[:8] == b"\x89PNG\r\n\x1a\n" for name in linked)
    finally:
        shared.page.close()


@pytest.mark.parametrize("content, expected", [
    (b"cluster: [1, 2\n", "malformed YAML at line"),
    (b"\xff\xfe\x00binary", "UTF-16 text; save it as UTF-8"),
])
def test_a_bad_upload_shows_its_one_line_error(tab, content, expected):
    tab.go("overview")
    tab.address_settled()
    tab.page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        {"name": "broken.yaml", "mimeType": "application/x-yaml", "buffer": content})
    tab.page.wait_for_function(
        "(text) => [...document.querySelectorAll('[data-testid=\"stAlertContentError\"]')]"
        ".some(e => e.innerText.includes(text))",
        arg=expected, timeout=30_000)
    state = tab.settle("Overview")
    assert not state["exceptions"] and not tab.console, (state["exceptions"], tab.console)
    sidebar = [e for e in state["errors"] if expected in e]
    assert sidebar and all("\n" not in e for e in sidebar), state["errors"]
    assert any(e.startswith("The scenario is not valid") for e in state["errors"])
