"""The twin dashboard (Streamlit): ``streamlit run dashboard/app.py``."""
