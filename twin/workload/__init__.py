"""Workload: the transformer, its parallel plan and its memory."""
