"""Words the teaching pages share, defined once so every page says the same thing.

β is only ever the inverse temperature; the LayerNorm's learned shift is called "shift b".
"""

from __future__ import annotations

import streamlit as st

# One definition of β, used on every page that offers it (Playground, Explore's experiments, Concepts).
BETA_TEXT = (
    "**β (inverse temperature)** multiplies the *scaled* scores q·k/√dₖ just before the softmax: "
    "β = 1 is the paper, β = 0 makes every weight equal, a large β approaches hard (argmax) attention. "
    "The notes' β = 1/√d is the paper's own scale, already inside q·k/√dₖ; our β is one more factor on top."
)
BETA_LATEX = r"a = \mathrm{softmax}\!\left(\beta\cdot\frac{q\cdot k}{\sqrt{d_k}}\right)"
SHIFT_TEXT = "a learned gain γ and shift b (one number per dimension each)"
LAYERNORM_LATEX = r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b"
# One translation direction everywhere: the encoder reads English, the decoder writes Spanish.
SOURCE_SENTENCE = "i have cats"
TARGET_SENTENCE = "yo tengo gatos"
DIRECTION = "English → Spanish"


def beta_note(where: str) -> None:
    """Show the one definition of β and, in ``where``, which scores it multiplies on this page."""
    st.markdown(BETA_TEXT)
    st.latex(BETA_LATEX)
    st.caption(f"Where it applies here: {where}")
