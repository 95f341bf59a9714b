"""twin — a digital twin of GPU supercomputers for LLM training."""

__version__ = "0.1.0"
