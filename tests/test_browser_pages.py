"""Every page of every shipped scenario, in a real browser: drawn without console errors, cut-off
headline numbers or empty charts (fixtures in tests/browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.panel import PAGES
from tests.browser import (SCENARIOS, SCREENSHOTS, assert_drawn_cleanly, browser, reading_problems,  # noqa: F401
                           server, shots, tab)

# Its module fixtures are set up once: all its tests run on one worker (pytest-xdist).
pytestmark = pytest.mark.xdist_group("browser-pages")


def test_every_page_of_every_shipped_scenario(tab, shots):
    """Drawn cleanly; at 1280 x 800 no element runs past the viewport, no money carries an SI prefix and no
    number shows more than four significant digits (every problem of every page listed at the end)."""
    problems = []
    for i, scenario in enumerate(SCENARIOS):
        if i:
            tab.choose_scenario(scenario)
        for page in PAGES:
            state = tab.go(page)
            assert_drawn_cleanly(tab, state, f"{scenario} {page}")
            if page == "overview":
                assert all(any(ch.isalpha() or ch == "%" for ch in m["text"]) for m in state["metrics"]), \
                    f"{scenario}: every headline number has its unit"
            if page != "scenario" and shots is None:
                problems += [f"{scenario} {page}: {p}" for p in reading_problems(tab)]
            if shots is not None and page in SCREENSHOTS.get(scenario, []):
                tab.screenshot(shots / f"{Path(scenario).stem}-{page}.png")
    assert not problems, "\n".join(problems)
