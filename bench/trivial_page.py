"""The browser benchmark's baseline page: what Streamlit and Plotly cost without any model.

One text area and one slider; every rerun draws one Plotly heatmap of ``?size=N`` × N cells
(default 12) from the text, the way the Explore page draws a head, then ``?extra=N`` unchanged
elements (default none; captions, Markdown lines and checkboxes in turn): the floor of a page that
sends as many elements per rerun as an app page does (``bench.browser_floor``). Served exactly like
the app (``streamlit run``, same flags), so app ÷ this page is what the app itself adds.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

size = int(st.query_params.get("size", 12))
extra = int(st.query_params.get("extra", 0))
st.title("Baseline")
text = st.text_area("Input text", key="text", value="the quick brown fox", height=90)
layer = st.slider("Layer", 1, 6, 1, key="layer")
codes = np.resize(np.frombuffer((text or " ").encode(), dtype=np.uint8).astype(float), size)  # (N,)
weights = np.outer(codes, np.roll(codes, layer))  # (N, N)
weights = weights / weights.sum(axis=1, keepdims=True)
figure = go.Figure(go.Heatmap(z=weights, colorscale="Blues", zmin=0, zmax=float(weights.max())))
figure.update_layout(width=600, height=600, title=f"layer {layer}")
st.plotly_chart(figure, width="content")
for i in range(extra):  # the same every rerun: what Streamlit takes to send and render an unchanged element
    if i % 3 == 0:
        st.caption(f"Caption {i}: a line of text that says how to read the chart above.")
    elif i % 3 == 1:
        st.markdown(f"**Markdown** line {i}, with `code` in it.")
    else:
        st.checkbox(f"Option {i}", key=f"option_{i}")
