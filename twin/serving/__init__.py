"""The serving twin: LLM inference under latency targets (levels 2s-4s beside the training engine)."""
