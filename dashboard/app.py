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
views.render(panel.sidebar())
