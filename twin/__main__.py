"""``python -m twin``: the command line (twin.cli), in the checkout's environment when this Python lacks
the dependencies (twin.checkout)."""

import gc

from twin.checkout import hand_over

hand_over()

from twin.cli import main  # noqa: E402 - after the hand-over, which needs none of it

status = main()
# The process ends here: what the command built (a 16,384-GPU fabric holds millions of objects) goes to the
# collector's permanent generation, so that the interpreter's last full collection at exit does not walk it
# (0.2-0.45 s of the 405B and SuperPOD runs). The exit handlers still run; the system frees the memory.
gc.freeze()
raise SystemExit(status)
