"""Errors the twin raises on purpose.

``ScenarioError`` is bad input: the CLI prints its one-line message and exits 2.
``InfeasibleError`` is a valid question whose answer is "this does not run"
(a plan that does not divide, a model that does not fit); searches skip it.
"""

from __future__ import annotations

from collections.abc import Iterable


class TwinError(Exception):
    """Base class for every error the twin raises deliberately."""


# A key path quoted in a message is cut to this many characters (keys may be anything a file holds).
MAX_FIELD_CHARS = 120


class ScenarioError(TwinError):
    """Bad input: names the field, the value and what is allowed, in one line."""

    def __init__(self, field: str, message: str):
        field = _printable(field)
        if len(field) > MAX_FIELD_CHARS:
            field = field[:MAX_FIELD_CHARS - 1] + "…"
        self.field = field
        message = _printable(" ".join(str(message).split()))     # one line, whatever the value held
        super().__init__(f"{field}: {message}" if field else message)


def _printable(text: str) -> str:
    """Control characters (a key may hold anything a file does) written as escapes: one printable line."""
    text = str(text)
    if text.isprintable():            # the usual case, checked at once: a search refuses thousands of plans
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class InfeasibleError(ScenarioError):
    """A well-formed plan that cannot run on the given hardware (a search skips it)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest choice, or '' when none is close."""
    import difflib          # only when a name is not known: not loaded by a command that goes well

    close = difflib.get_close_matches(str(name).lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    if not close:
        return ""
    original = {c.lower(): c for c in choices}[close[0]]
    return f" (did you mean '{original}'?)"
