"""twin dashboard: ``streamlit run dashboard/app.py``.

The sidebar chooses a page, a scenario and its what-if knobs; each page draws
the simulated result. Logic lives in ``dashboard.core``; pages describe UI.
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import streamlit as st  # noqa: E402

from dashboard import panel, views  # noqa: E402

st.set_page_config(page_title="twin — GPU supercomputer digital twin", page_icon="🖥️", layout="wide")
# Headline numbers shrink with the window (never below 1.3 rem) rather than being cut off.
st.html("<style>[data-testid='stMetricValue'] { font-size: clamp(1.3rem, 2.1vw, 2.25rem); }</style>")
views.render(panel.sidebar())
