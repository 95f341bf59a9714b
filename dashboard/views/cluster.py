"""Cluster page: the fabric as a picture, and the rack floor against the rack limit."""

from __future__ import annotations

import streamlit as st

from dashboard.panel import Context
from dashboard.views import figure, needs_result, table
from twin.figures.fabric import fabric_figure
from twin.figures.power import hottest_racks, rack_power_figure
from twin.units import fmt_si


def render(ctx: Context) -> None:
    if not needs_result(ctx):
        return
    r = ctx.result
    fabric = r.get("fabric") or {}
    st.subheader("Fabric")
    if fabric:                                  # three to a row: switch counts of a large fabric are long
        cols = st.columns(3)
        cols[0].metric("Scalable units", f"{fabric.get('scalable_units', 0)} × {fabric.get('nodes_per_su', 0)} nodes")
        cols[1].metric("Leaf / spine / core switches",
                       f"{fabric.get('leaves', 0):,} / {fabric.get('spines', 0):,} / {fabric.get('cores', 0):,}")
        cols[2].metric("Oversubscription", f"{fabric.get('oversubscription', 1.0):g} : 1")
        cols = st.columns(3)
        cols[0].metric("Link", fmt_si(8 * fabric.get("link_Bps", 0.0), "b/s"), help="line rate of one NIC port")
        cols[1].metric("Bisection", fmt_si(fabric.get("bisection_Bps", 0.0), "B/s"))
    figure("Fabric picture", fabric_figure, fabric, available=bool(fabric))

    st.subheader("Rack power")
    power = r.get("power") or {}
    limit = power.get("rack_limit_w")
    cols = st.columns(5)
    cols[0].metric("Racks", f"{power.get('racks') or 0:,}",
                   help=f"{power.get('nodes_per_rack', '?')} nodes per rack")
    cols[1].metric("Rack peak (IT)", fmt_si(power.get("rack_peak_w", 0.0), "W"))
    cols[2].metric("Rack limit", fmt_si(limit, "W") if limit else "none set")
    cols[3].metric("Racks over the limit", f"{power.get('racks_over_limit', 0)}")
    cols[4].metric("Cluster peak (IT)", fmt_si(r.get("peak_power_it_w", 0.0), "W"))
    if figure("Rack floor", rack_power_figure, r, available=bool(power.get("rack_groups"))):
        if not limit:
            st.caption("No rack power limit in the scenario: set `cluster.rack_power_limit` (e.g. `25 kW`) to see "
                       "each rack against it.")
        st.markdown("**Hottest racks** (racks that draw alike share a row)")
        table(hottest_racks(r))
