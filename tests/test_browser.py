"""The dashboard in a real browser (Playwright driving Debian's Chromium): every page of every shipped
scenario is drawn without console errors, cut-off headline numbers or empty charts; knob changes
answer within the time bound; a bad upload shows its one-line error; pinned what-ifs travel in the
URL; the report downloads. One server and one browser serve every test, pages visited in turn.

The same run takes the screenshots of docs/screenshots/ when ``TWIN_SCREENSHOTS`` names a folder:
``TWIN_SCREENSHOTS=docs/screenshots python -m pytest tests/test_browser.py`` regenerates them.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

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
KNOB_BOUND_S = 1.5                      # a knob change shows in the headline within this
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
        drawn), and still has 0.05 s later; then its state."""
        for _ in range(2):
            self.page.wait_for_function(READY_JS, arg=title, timeout=timeout_s * 1000, polling=25)
            time.sleep(0.05)
        return self.state()

    def go(self, page: str) -> dict:
        self.page.locator('[data-testid="stSidebar"] [data-testid="stRadio"] label').filter(
            has_text=PAGES[page]).first.click()
        return self.settle(PAGES[page])

    def choose_scenario(self, name: str) -> None:
        box = self.page.get_by_role("combobox", name="Shipped scenario")
        box.click()
        box.fill(name)                      # the list shows only what fits: narrow it to the one
        self.page.get_by_role("option", name=name, exact=True).click()

    def caption(self) -> str:
        """The line under the page title: the scenario and its what-if."""
        return self.page.evaluate(CAPTION_JS)

    def turn(self, label: str, value: str) -> tuple[float, float]:
        """Set a sidebar number knob; seconds until the headline shows the new what-if, and until the page is done."""
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
        self.settle("Overview")
        return shown, time.perf_counter() - start

    def screenshot(self, path: Path) -> None:
        """The whole page, however long, as one picture."""
        height = min(MAX_SHOT_HEIGHT, max(VIEWPORT["height"], self.state()["main_height"]))
        self.page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        time.sleep(0.3)
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(VIEWPORT)


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


def test_every_page_of_every_shipped_scenario(tab, shots):
    for i, scenario in enumerate(SCENARIOS):
        if i:
            tab.choose_scenario(scenario)
        for page in PAGES:
            state = tab.go(page)
            assert_drawn_cleanly(tab, state, f"{scenario} {page}")
            if page == "overview":
                assert all(any(ch.isalpha() or ch == "%" for ch in m["text"]) for m in state["metrics"]), \
                    f"{scenario}: every headline number has its unit"
            if shots is not None and page in SCREENSHOTS.get(scenario, []):
                tab.screenshot(shots / f"{Path(scenario).stem}-{page}.png")


# scenario → knob changes (label, new value), each a what-if never simulated before
KNOB_CHANGES = {
    "superpod.yaml": [("Nodes", "120"), ("Tokens [billion]", "1500"), ("PUE [facility W / IT W]", "1.35")],
    "llama3-405b-16k.yaml": [("Nodes", "2304"), ("Tokens [billion]", "12000"), ("Global batch [sequences]", "4096")],
}


@pytest.mark.parametrize("scenario", list(KNOB_CHANGES))
def test_a_knob_change_shows_in_the_headline_in_time(tab, knob_timings, scenario):
    tab.choose_scenario(scenario)
    tab.go("overview")
    shown = []
    for label, value in KNOB_CHANGES[scenario]:
        seconds, done = tab.turn(label, value)
        shown.append(seconds)
        state = tab.state()
        assert_drawn_cleanly(tab, state, f"{scenario} {label} = {value}")
        assert not state["errors"], state["errors"]
        knob_timings.setdefault(scenario, []).append((label, seconds, done))
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
