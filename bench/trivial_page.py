"""The browser benchmark's baseline page: what Streamlit and Plotly cost without any model.

One text area and one slider; every rerun draws one Plotly heatmap of ``?size=N`` × N cells
(default 12) from the text, the way the Explore page draws a head. Served exactly like the app
(``streamlit run``, same flags), so app ÷ this page is what the app itself adds.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

size = int(st.query_params.get("size", 12))
st.title("Baseline")
text = st.text_area("Input text", key="text", value="the quick brown fox", height=90)
layer = st.slider("Layer", 1, 6, 1, key="layer")
codes = np.resize(np.frombuffer((text or " ").encode(), dtype=np.uint8).astype(float), size)  # (N,)
weights = np.outer(codes, np.roll(codes, layer))  # (N, N)
weights = weights / weights.sum(axis=1, keepdims=True)
figure = go.Figure(go.Heatmap(z=weights, colorscale="Blues", zmin=0, zmax=float(weights.max())))
figure.update_layout(width=600, height=600, title=f"layer {layer}")
st.plotly_chart(figure, width="content")
