"""The dashboard in a real browser (Playwright driving Debian's Chromium): the server, the browser and the
tab that the browser tests share. A test file imports the fixtures and gets one of each for itself, so
that the files can run side by side (tests/test_browser_pages.py, tests/test_browser_what_ifs.py).

The page test takes the screenshots of docs/screenshots/ when ``TWIN_SCREENSHOTS`` names a folder:
``TWIN_SCREENSHOTS=docs/screenshots python -m pytest tests/test_browser_pages.py`` regenerates them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard import core  # noqa: E402
from dashboard.panel import PAGES  # noqa: E402

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = os.environ.get("TWIN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)", allow_module_level=True)

# Nothing reaches the network: no updates, no QUIC, no background services.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# A laptop's window; screenshots for the docs are taken wider.
VIEWPORT = {"width": 1600, "height": 1200} if os.environ.get("TWIN_SCREENSHOTS") else {"width": 1280, "height": 800}
SCENARIOS = core.shipped_scenarios(ROOT / "scenarios")
DEFAULT_SCENARIO = "superpod.yaml"      # the sidebar's first choice (dashboard/panel.py, sidebar)
KNOB_BOUND_S = 1.5                      # a knob change shows in the headline within this
ADDRESS_SETTLE_S = 0.5                  # after the address bar shows a change, before an action naming no page
SCREENSHOTS = {                         # scenario → pages kept as docs/screenshots/<stem>-<page>.png
    "superpod.yaml": ["scenario", "overview", "cluster", "step", "job", "compare"],
    "llama3-405b-16k.yaml": ["overview", "cluster", "job", "compare"],
}
MAX_SHOT_HEIGHT = 2600

# Whether the page titled ``title`` is done drawing (cheap: no layout).
READY_JS = """(title) => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && !document.querySelector('[data-stale="true"]')
    && [...document.querySelectorAll('[data-testid="stMain"] h1')].some(e => e.textContent.trim() === title)
    && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg'));
}"""
# The page's state: whether the script runs, what it drew, and what is wrong with it.
STATE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const metrics = [...document.querySelectorAll('[data-testid="stMetricValue"]')].map(e => {
    const box = e.firstElementChild || e;
    return {text: e.innerText.trim(), overflows: box.scrollWidth > box.clientWidth + 1};
  });
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(c => {
    const gd = c.querySelector('.js-plotly-plot');
    const traces = (gd && gd.data) || [];
    const filled = traces.some(t => ['x', 'y', 'z', 'values'].some(k => t[k] && Array.from(t[k]).some(
      v => v !== null && v !== undefined && !(Array.isArray(v) && v.every(w => w === null)))));
    const title = gd && gd.layout && gd.layout.title ? (gd.layout.title.text || '') : '';
    return {drawn: !!(gd && c.querySelector('.main-svg')), filled, title};
  });
  return {
    running: !app || app.getAttribute('data-test-script-state') !== 'notRunning',
    connected: !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED',
    stale: document.querySelectorAll('[data-stale="true"]').length,
    h1: [...document.querySelectorAll('[data-testid="stMain"] h1')].map(e => e.innerText.trim()),
    exceptions: [...document.querySelectorAll('[data-testid="stException"]')].map(e => e.innerText.slice(0, 300)),
    errors: [...document.querySelectorAll('[data-testid="stAlertContentError"]')].map(e => e.innerText.trim()),
    metrics, charts,
    main_height: (document.querySelector('[data-testid="stMain"]') || {}).scrollHeight || 0,
  };
}"""


# textContent, not innerText: polling must not force the page's layout while it redraws.
CAPTION_JS = """() => {
  const c = document.querySelector('[data-testid="stMain"] [data-testid="stCaptionContainer"]');
  return c ? c.textContent : '';
}"""
# The caption names the new what-if and the first headline number is drawn afresh (not stale).
HEADLINE_JS = """(before) => {
  const c = document.querySelector('[data-testid="stMain"] [data-testid="stCaptionContainer"]');
  const m = document.querySelector('[data-testid="stMetric"]');
  return !!c && c.textContent !== before && !!m && !m.closest('[data-stale="true"]');
}"""


def missing(title: str, state: dict) -> str:
    """What keeps the page titled ``title`` from being done, from its ``STATE_JS`` state."""
    why = []
    if state["running"]:
        why.append("the script is still running")
    if not state["connected"]:
        why.append("not connected to the server")
    if state["stale"]:
        why.append(f"{state['stale']} stale elements")
    if title not in state["h1"]:
        why.append(f"titles {state['h1']}")
    undrawn = [c["title"] or "untitled" for c in state["charts"] if not c["drawn"]]
    if undrawn:
        why.append(f"charts not drawn: {undrawn}")
    if state["exceptions"]:
        why.append(f"exceptions: {state['exceptions']}")
    return "; ".join(why) or "nothing visible (it changed meanwhile)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--theme.base", "light"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


class Tab:
    """One browser page on the dashboard, with every console error it logged."""

    def __init__(self, browser, url: str):
        self.page = browser.new_page(viewport=VIEWPORT, accept_downloads=True)
        self.console: list[str] = []
        self.page.on("console", lambda m: self.console.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console.append(str(e)))
        self.page.goto(url)

    def state(self) -> dict:
        return self.page.evaluate(STATE_JS)

    def settle(self, title: str, timeout_s: float = 90.0) -> dict:
        """Wait until the page titled ``title`` has finished drawing (script done, nothing stale, every chart
        drawn), and still has 0.05 s later; then its state. A page not done in time fails naming what was
        missing (script still running, stale elements, titles, undrawn charts)."""
        try:
            self.page.wait_for_function(READY_JS, arg=title, timeout=timeout_s * 1000, polling=25)
            time.sleep(0.05)
            self.page.wait_for_function(READY_JS, arg=title, timeout=timeout_s * 1000, polling=25)
        except sync_api.TimeoutError:
            raise AssertionError(f"page {title!r} not done after {timeout_s:.0f} s: "
                                 f"{missing(title, self.state())}; console: {self.console[-3:]}") from None
        return self.state()

    def go(self, page: str) -> dict:
        """Open ``page`` from the sidebar; its state once drawn and its address shown. The next click on a page
        names its page itself; an action that does not (a knob, an upload) waits for the address first
        (``address_settled``)."""
        self.page.locator('[data-testid="stSidebar"] [data-testid="stRadio"] label').filter(
            has_text=PAGES[page]).first.click()
        state = self.settle(PAGES[page])
        self.await_url("page", None if page == "overview" else PAGES[page])
        return state

    def address_settled(self) -> None:
        """A moment after the address bar shows a change, as a person pauses: under load the browser's own copy
        of the address, which the next rerun carries, may trail the bar (a knob changed on the Job page right
        after its address showed reopened the Overview)."""
        time.sleep(ADDRESS_SETTLE_S)

    def choose_scenario(self, name: str) -> None:
        box = self.page.get_by_role("combobox", name="Shipped scenario")
        box.click()
        box.fill(name)                      # the list shows only what fits: narrow it to the one
        self.page.get_by_role("option", name=name, exact=True).click()
        # the default scenario may be left out of the address bar
        self.await_url("scenario_file", name, *([None] if name == DEFAULT_SCENARIO else []))
        self.address_settled()              # the next rerun, whatever triggers it, carries the scenario

    def await_url(self, key: str, *values: str | None, timeout_s: float = 30.0) -> None:
        """Wait until the address bar holds ``key`` at one of ``values`` (None: no ``key``). The page and the
        scenario live in the URL: a rerun the browser asks for carries its query string, so an action taken
        before the address bar shows the last one would be answered with the state the bar still holds."""
        self.page.wait_for_function("([k, vs]) => vs.includes(new URLSearchParams(location.search).get(k))",
                                    arg=[key, list(values)], timeout=timeout_s * 1000, polling=25)

    def caption(self) -> str:
        """The line under the page title: the scenario and its what-if."""
        return self.page.evaluate(CAPTION_JS)

    def turn(self, label: str, value: str, page: str = "Overview") -> tuple[float, float]:
        """Set a sidebar number knob; seconds until the headline shows the new what-if, and until ``page`` (its
        title) is done."""
        self.address_settled()
        before = self.caption()
        field = self.page.get_by_label(label, exact=True)
        group = self.page.locator('[data-testid="stExpander"] details').filter(has=field)
        if group.get_attribute("open") is None:          # its group of knobs is folded: unfold it
            group.locator("summary").click()
        field.fill(value)
        start = time.perf_counter()
        field.press("Enter")
        self.page.wait_for_function(HEADLINE_JS, arg=before, timeout=120_000, polling=25)
        shown = time.perf_counter() - start
        self.settle(page)
        return shown, time.perf_counter() - start

    def screenshot(self, path: Path) -> None:
        """The whole page, however long, as one picture."""
        height = min(MAX_SHOT_HEIGHT, max(VIEWPORT["height"], self.state()["main_height"]))
        self.page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        time.sleep(0.3)
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(VIEWPORT)

# What a reader sees of the page, beyond the headline: the main area's text (without the scenario's YAML, in code
# blocks and the editor), and every element that runs past the viewport's right edge where nothing clips or
# scrolls it (a table that scrolls inside its own frame is not counted; the page itself must not scroll sideways).
READING_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return {text: '', wide: []};
  const texts = [];                       // each text node on its own line: tick labels do not run together
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement.closest('[data-testid="stCode"], textarea, pre, code')) texts.push(n.nodeValue);
  }
  const width = window.innerWidth;
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== main.parentElement; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o !== 'visible') return a.getBoundingClientRect().right <= width + 1;
    }
    return false;
  };
  const wide = [...main.querySelectorAll('*')].filter(e => !e.closest('svg'))
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > width + 1; })
    .filter(e => !clipped(e))
    .slice(0, 5).map(e => (e.getAttribute('data-testid') || e.tagName) + ': ' + (e.innerText || '').slice(0, 60));
  return {text: texts.join(' | '), wide, page_wide: document.documentElement.scrollWidth > width + 1};
}"""
# Money with an SI prefix ('389m EUR', '5.12 M EUR', '3k€'), and numbers with a decimal part or without
# separators that show more than four significant digits ('12.3456 s', '3497355'); exact counts written with
# separators ('4,063,232 tokens') and years are not measurements and stay as they are.
MONEY_PREFIX = r"\d\s?[kMGTmµ]\s?(?:EUR|€)"
LONG_DECIMAL = r"(?<![\w.:/-])\d[\d,]*\.\d+"
RAW_NUMBER = r"(?<![\w.,:/-])\d{5,}(?![\w.,:/])"


def reading_problems(tab: "Tab") -> list[str]:
    """SI prefixes on money, over four significant digits, and elements wider than the viewport."""
    import re

    seen = tab.page.evaluate(READING_JS)
    text = seen["text"]
    out = [f"money with an SI prefix: {m.group(0)!r}" for m in re.finditer(MONEY_PREFIX, text)]
    for m in re.finditer(LONG_DECIMAL, text):
        digits = m.group(0).replace(",", "").replace(".", "").lstrip("0")
        if len(digits) > 4:
            out.append(f"more than four significant digits: {m.group(0)!r}")
    out += [f"a raw number: {m.group(0)!r}" for m in re.finditer(RAW_NUMBER, text)]
    out += [f"wider than the viewport: {w}" for w in seen["wide"]]
    if seen["page_wide"]:
        out.append("the page scrolls sideways")
    return out


def assert_drawn_cleanly(tab: Tab, state: dict, where: str) -> None:
    assert not state["exceptions"], f"{where}: {state['exceptions']}"
    assert not tab.console, f"{where}: console errors {tab.console}"
    cut = [m["text"] for m in state["metrics"] if m["overflows"]]
    assert not cut, f"{where}: headline numbers cut off: {cut}"
    empty = [c["title"] for c in state["charts"] if not c["filled"]]
    assert not empty, f"{where}: charts without data: {empty}"


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path | None:
    """Where screenshots go: the folder TWIN_SCREENSHOTS names (relative to the repository), else none."""
    folder = os.environ.get("TWIN_SCREENSHOTS")
    if not folder:
        return None
    path = Path(folder) if Path(folder).is_absolute() else ROOT / folder
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def tab(server, browser):
    """The one tab the tests share, as a user would: pages visited in turn, scenarios switched in the sidebar."""
    shared = Tab(browser, f"{server}/?page=Overview&scenario_file={SCENARIOS[0]}")
    shared.settle("Overview")
    yield shared
    shared.page.close()
