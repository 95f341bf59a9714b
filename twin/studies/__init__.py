"""Studies: sweeps over scenario keys and searches over parallel plans and clusters, on top of the API.

``space`` parses ``--vary``; ``executor`` runs points on local processes or a Dask cluster;
``store`` keeps results as Parquet and CSV with a ``study.yaml``; ``sweep`` runs a study;
``search`` enumerates, prunes and ranks plans and options (``twin plan``, ``twin fit``) and keeps Pareto fronts.
"""
