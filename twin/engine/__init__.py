"""Engines: operator times (level 1), one training step (level 2), the whole job (level 3)."""
