"""Power, energy, carbon and cost."""
