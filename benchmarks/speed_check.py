"""Speed guard: every shipped scenario and command, timed against a fixed reference computation.

Each command runs as a user runs it (``python -m twin ...``, a fresh process, imports
included) and is charged the CPU seconds of that process. The same process that starts
them runs a fixed pure-Python computation (``reference``) just before each command, and
the command's cost is kept as a ratio to it, so the check holds on a faster or slower
machine and, being CPU time measured beside the command rather than wall time, on a
machine shared with other work. A command whose ratio
exceeds ``LIMIT`` × the ratio recorded in ``speed_reference.json`` is measured again (up
to ``RETRIES`` times, the smallest kept, as a busy machine only ever slows a run) and
fails the check if it stays above.

    python benchmarks/speed_check.py            # check (exit 1 on a regression)
    python benchmarks/speed_check.py --record   # measure and write speed_reference.json
    python benchmarks/speed_check.py --only run  # the commands whose name contains 'run'

The whole check costs about 21 s of CPU on 2 cores (docs/speed.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = Path(__file__).with_name("speed_reference.json")
LIMIT = 1.5            # a ratio this many times the recorded one is a regression
RETRIES = 2            # extra measurements of a command that looks slow
TIMEOUT_S = 120        # one command; a hung command fails the check rather than the CI job
REFERENCE_ITEMS = 300_000


def reference() -> float:
    """A fixed computation of the kind the twin does (objects, dicts, sorting, float arithmetic)."""
    rng = random.Random(1)
    values = [rng.random() for _ in range(REFERENCE_ITEMS)]
    by_key = {i: v for i, v in enumerate(sorted(values))}
    return sum(by_key[i] * (i % 7) for i in range(0, REFERENCE_ITEMS, 3))


def reference_cpu_s(repeats: int = 3) -> float:
    """CPU seconds of ``reference`` in this process, the smallest of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        reference()
        best = min(best, time.process_time() - start)
    return best


@dataclass(frozen=True)
class Command:
    name: str
    argv: tuple[str, ...]


def commands() -> list[Command]:
    """The commands guarded: help, a catalog listing, every shipped scenario's run, fit (a small one, and the
    SuperPOD's, whose table times few of its 788 fitting options), plan, the capacity of each serving scenario,
    and the two slowest commands, the 405B scenario's fit and plan (about 2.7 CPU s each)."""
    scenarios = sorted((ROOT / "scenarios").glob("*.yaml"))
    out = [Command("--help", ("--help",)), Command("catalog gpus", ("catalog", "gpus"))]
    out += [Command(f"run {p.stem}", ("run", str(p.relative_to(ROOT)))) for p in scenarios]
    out += [Command("fit finetune-70b-qlora", ("fit", "scenarios/finetune-70b-qlora.yaml")),
            Command("fit superpod", ("fit", "scenarios/superpod.yaml")),
            Command("plan superpod", ("plan", "scenarios/superpod.yaml")),
            Command("capacity serve-llama70b-h100", ("capacity", "scenarios/serve-llama70b-h100.yaml")),
            Command("capacity serve-gh200", ("capacity", "scenarios/serve-gh200.yaml")),
            Command("capacity serve-8b-l4-vs-mig", ("capacity", "scenarios/serve-8b-l4-vs-mig.yaml")),
            Command("fit llama3-405b-16k", ("fit", "scenarios/llama3-405b-16k.yaml")),
            Command("plan llama3-405b-16k", ("plan", "scenarios/llama3-405b-16k.yaml"))]
    return out


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ratio(command: Command) -> tuple[float, float, float]:
    """(ratio to the reference timed just before, CPU seconds, wall seconds) of one run of ``command``."""
    ref_s = reference_cpu_s(repeats=1)
    cpu_s, wall_s = measure(command)
    return cpu_s / ref_s, cpu_s, wall_s


def measure(command: Command) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh ``python -m twin`` process running ``command``."""
    before, start = _children_cpu_s(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "twin", *command.argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S, check=False)
    wall_s, cpu_s = time.perf_counter() - start, _children_cpu_s() - before
    if done.returncode != 0:
        raise SystemExit(f"speed check: '{command.name}' failed (exit {done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")
    return cpu_s, wall_s


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def check(selected: list[Command], recorded: dict[str, float], retries: int) -> list[str]:
    """Measure every command; the names of those past LIMIT × their recorded ratio."""
    slow = []
    print(f"{'command':34} {'CPU s':>7} {'wall s':>7} {'ratio':>7} {'recorded':>9}  verdict")
    for command in selected:
        allowed = LIMIT * recorded[command.name] if command.name in recorded else float("inf")
        found, cpu_s, wall_s = ratio(command)
        for _ in range(retries):
            if found <= allowed:
                break
            again = ratio(command)
            if again[0] < found:
                found, cpu_s, wall_s = again
        verdict = "new" if command.name not in recorded else "ok" if found <= allowed else f"SLOWER than {allowed:.1f}"
        if found > allowed:
            slow.append(command.name)
        shown = f"{recorded[command.name]:9.2f}" if command.name in recorded else f"{'-':>9}"
        print(f"{command.name:34} {cpu_s:7.2f} {wall_s:7.2f} {found:7.2f} {shown}  {verdict}", flush=True)
    return slow


def record(selected: list[Command]) -> dict:
    """Each command's ratio, the smaller of two measurements."""
    ratios = {}
    for command in selected:
        ratios[command.name] = round(min(ratio(command)[0] for _ in range(2)), 3)
        print(f"{command.name:34} ratio {ratios[command.name]:.2f}", flush=True)
    return ratios


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", action="store_true", help=f"write the measured ratios into {RECORD.name}")
    p.add_argument("--only", metavar="TEXT", help="only the commands whose name contains TEXT")
    args = p.parse_args(argv)
    selected = [c for c in commands() if args.only is None or args.only in c.name]
    if not selected:
        print(f"speed check: no command's name contains '{args.only}'", file=sys.stderr)
        return 2
    started = time.perf_counter()
    print(f"reference: {reference_cpu_s():.3f} CPU s; {_load()}")
    if args.record:
        old = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {"ratios": {}}
        ratios = old["ratios"] | record(selected)
        RECORD.write_text(json.dumps({"limit": LIMIT, "recorded_under": _load(), "ratios": ratios}, indent=1) + "\n",
                          encoding="utf-8")
        print(f"wrote {RECORD}")
        return 0
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))["ratios"]
    slow = check(selected, recorded, RETRIES)
    print(f"{len(selected)} commands in {time.perf_counter() - started:.0f} s; {_load()}")
    if slow:
        print(f"speed check: {len(slow)} slower than {LIMIT}x their recorded ratio: {', '.join(slow)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
