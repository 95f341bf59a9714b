"""``python -m twin``: the command line (twin.cli), in the checkout's environment when this Python lacks
the dependencies (twin.checkout)."""

from twin.checkout import hand_over

hand_over()

from twin.cli import main  # noqa: E402 - after the hand-over, which needs none of it

raise SystemExit(main())
