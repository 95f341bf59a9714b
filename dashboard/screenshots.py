"""Regenerate one screenshot per dashboard page into docs/screenshots/.

    python dashboard/screenshots.py [--port 8599] [--out docs/screenshots] [--chromium chromium]

Starts ``streamlit run dashboard/app.py`` headless on a localhost port, drives a
headless Chromium over the DevTools protocol (``websockets`` client), waits
until each page has finished drawing, and saves ``<page>.png``. Needs Chromium
(Debian: ``apt-get install chromium``); when run as root it passes --no-sandbox.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parent.parent
PAGES = {               # page → (title, window height in px, scenario shown)
    "scenario": ("Scenario", 1250, "superpod.yaml"),
    "overview": ("Overview", 1250, "superpod.yaml"),
    "cluster": ("Cluster", 1250, "superpod.yaml"),
    "step": ("Training step", 1250, "superpod.yaml"),
    "job": ("Job", 1350, "llama3-405b-16k.yaml"),      # failures simulated
    "compare": ("Compare", 1350, "superpod.yaml"),
    "study": ("Study", 1700, "superpod.yaml"),         # a live sweep of the site's country and PUE
}
WIDTH = 1600


def wait_http(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout_s:.0f} s")


class DevTools:
    """A minimal Chrome DevTools Protocol session on one page target."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


# True once the page's title is drawn, the script is not running and the DOM has stopped growing.
READY_JS = """(() => {
  const h1 = [...document.querySelectorAll('h1')].map(e => e.innerText.trim());
  const running = document.querySelector('[data-testid="stStatusWidget"]') !== null
               || document.querySelector('[data-testid="stSkeleton"]') !== null;
  const main = document.querySelector('[data-testid="stMain"]');
  return JSON.stringify({h1, running, size: document.body.innerHTML.length,
                         text: main ? main.innerText.slice(0, 400) : '',
                         plots: document.querySelectorAll('.main-svg').length});
})()"""


def wait_drawn(dev: DevTools, title: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    last, stable_since, state = None, None, {}
    while time.monotonic() < deadline:
        try:
            state = json.loads(dev.evaluate(READY_JS) or "{}")
        except RuntimeError:          # the page is navigating: its context is gone for a moment
            state = {}
        ready = title in state.get("h1", []) and not state.get("running")
        key = (state.get("size"), state.get("plots"))
        if ready and key == last:
            if stable_since and time.monotonic() - stable_since > 1.5:
                return
            stable_since = stable_since or time.monotonic()
        else:
            stable_since = None
        last = key
        time.sleep(0.25)
    raise TimeoutError(f"page '{title}' did not finish drawing within {timeout_s:.0f} s: {state}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8599)
    parser.add_argument("--devtools-port", type=int, default=9333)
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    parser.add_argument("--pages", nargs="*", default=list(PAGES), choices=list(PAGES))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "app.py"), "--server.headless", "true",
         "--server.port", str(args.port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", "--theme.base", "light", "--client.toolbarMode", "viewer"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    profile = tempfile.mkdtemp(prefix="twin-chromium-")
    flags = ["--headless", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--remote-debugging-port={args.devtools_port}", f"--window-size={WIDTH},1200"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")
    browser = subprocess.Popen([args.chromium, *flags, "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{args.port}/_stcore/health", 60)
        wait_http(f"http://127.0.0.1:{args.devtools_port}/json/version", 30)
        with urllib.request.urlopen(f"http://127.0.0.1:{args.devtools_port}/json/list") as response:
            target = next(t for t in json.load(response) if t["type"] == "page")
        with connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=20) as ws:
            dev = DevTools(ws)
            dev.call("Page.enable")
            for page in args.pages:
                title, height, scenario = PAGES[page]
                if not (ROOT / "scenarios" / scenario).exists():
                    scenario = "superpod.yaml"
                dev.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height, deviceScaleFactor=1,
                         mobile=False)
                url = f"http://127.0.0.1:{args.port}/?" + urllib.parse.urlencode({"page": title, "scenario_file": scenario})
                for attempt in (1, 2):          # a cold server occasionally drops the first session: load again
                    dev.call("Page.navigate", url=url)
                    try:
                        wait_drawn(dev, title, timeout_s=45.0 * attempt)
                        break
                    except TimeoutError:
                        if attempt == 2:
                            raise
                png = base64.b64decode(dev.call("Page.captureScreenshot", format="png")["data"])
                path = out / f"{page}.png"
                path.write_bytes(png)
                print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({len(png) // 1024} KiB)")
    finally:
        browser.terminate()
        server.terminate()
        browser.wait(timeout=10)
        server.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
