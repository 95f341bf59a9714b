"""Plotly figures built from a Result record, shared by the dashboard and reports.

Each module holds the figures of one layer; every function takes plain data
(a ``Result`` or its dict) and returns a ``plotly.graph_objects.Figure``.
"""
