"""A long command says it is working on a terminal, and stays quiet when piped."""

from __future__ import annotations

import io
import time

from twin import ticker


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quiet_when_piped_or_json_and_drawn_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert not ticker.wanted(io.StringIO(), False)
    assert not ticker.wanted(Terminal(), True)
    assert ticker.wanted(Terminal(), False)
    monkeypatch.setenv("CI", "1")
    assert not ticker.wanted(Terminal(), False)


def test_the_line_appears_after_the_delay_and_is_wiped_at_the_end(monkeypatch):
    monkeypatch.setattr(ticker, "AFTER_S", 0.05)
    monkeypatch.setattr(ticker, "EVERY_S", 0.02)
    stream = Terminal()
    with ticker.ticking("validate", stream, True):
        time.sleep(0.3)
    out = stream.getvalue()
    assert "twin validate: working… 0 s" in out
    assert out.endswith("\r") and out.rstrip("\r").endswith(" ")     # the line is wiped


def test_a_short_command_draws_nothing(monkeypatch):
    stream = Terminal()
    with ticker.ticking("run", stream, True):
        pass
    with ticker.ticking("run", stream, False):
        time.sleep(0.01)
    assert stream.getvalue() == ""
    assert ticker.line("plan", 12.4) == "twin plan: working… 12 s"
