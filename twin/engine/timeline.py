"""The recorded sample's timeline: blocks of training expanded into train and checkpoint segments.

Both job engines record the sample a result shows the same way (``engine/job.py``'s SimPy processes, the
reference, and ``engine/job_loop.py``'s event loop): restarts and repair waits as segments, failures and
restarts as events, and each block of training from a durable checkpoint as a ``Block`` with the checkpoints
it completed and saved, in the order they happened. ``expanded`` turns that record into the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.jobs.model import Event, Phase, Segment

TRAIN, CHECKPOINT, RESTART = Phase.TRAIN, Phase.CHECKPOINT, Phase.RESTART
# Beyond this many checkpoints in the recorded sample, each block of training between two
# disruptions is one "train" segment carrying its checkpoint count and time (keeps results small).
MAX_TIMELINE_CHECKPOINTS = 2000


@dataclass
class Block:
    """A block of training from a durable checkpoint to a failure or to the end."""
    start_s: float
    end_s: float
    train_s: float                   # training part of a cycle
    ckpt_s: float                    # checkpoint part of a cycle (stall, plus waiting on the previous write)
    checkpoints: int                 # completed within the block
    durable_lag_s: float             # async: the write after the stall


def expanded(blocks: list[Block], recorded: list, events: list[Event]) -> tuple[list[Segment], list[Event]]:
    """The timeline of a record: ``recorded`` holds segments and (block index, checkpoints saved) in the
    order they happened; each block becomes train and checkpoint segments and its saved checkpoints' events
    (one train segment per block past ``MAX_TIMELINE_CHECKPOINTS``), the segments sorted by start, the two
    parts of one restart (detection, relaunch) merged, the events sorted by time."""
    expand = sum(b.checkpoints for b in blocks) <= MAX_TIMELINE_CHECKPOINTS
    segments: list[Segment] = []
    events = list(events)
    for item in recorded:
        if isinstance(item, Segment):
            segments.append(item)
            continue
        b, saved = blocks[item[0]], item[1]
        cycle = b.train_s + b.ckpt_s
        if expand:
            t = b.start_s
            for i in range(b.checkpoints):
                segments.append(Segment(t, min(b.end_s, t + b.train_s), TRAIN))
                segments.append(Segment(t + b.train_s, min(b.end_s, t + cycle), CHECKPOINT))
                t += cycle
            if b.end_s > t:
                segments.append(Segment(t, b.end_s, TRAIN))
            events += [Event(b.start_s + (i + 1) * cycle + b.durable_lag_s, "checkpoint") for i in range(saved)]
        else:
            segments.append(Segment(b.start_s, b.end_s, TRAIN, b.checkpoints, b.checkpoints * b.ckpt_s))
    segments = sorted((s for s in segments if s.end_s > s.start_s), key=lambda s: s.start_s)
    merged: list[Segment] = []
    for s in segments:           # detection and relaunch of one restart read as one segment
        last = merged[-1] if merged else None
        if last and last.phase == s.phase == RESTART and abs(last.end_s - s.start_s) < 1e-9:
            merged[-1] = Segment(last.start_s, s.end_s, RESTART)
        else:
            merged.append(s)
    events.sort(key=lambda e: e.t_s)
    return merged, events
