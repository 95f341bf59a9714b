"""Data and storage: tiers (object storage, parallel file system, local NVMe), datasets, data loading,
checkpoints against capacity, and data preparation as a job (docs/storage.md)."""
