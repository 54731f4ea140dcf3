"""The code beside each Lesson stage, as the Annotated Transformer sets its code beside its prose: the paper's model's
own implementation of the step (:func:`core.lessons.implementation`), named as the Annotated Transformer names it,
in an expander that builds and sends the source only once it is opened."""

from __future__ import annotations

import streamlit as st

from app.ui import language, presentation
from core import lessons

# stage title → the step whose code it shows; "Embeddings + positions" (each family its own positions) and the
# encoder-only track's last stage have none, "Sampling instead of greedy" quotes its own in its drawing
STEP_OF = {
    "Tokens": "tokens", "Embeddings + positional encoding": "positional_encoding", "Q, K, V of one head": "projections",
    "Scores q·k": "attention", "÷ √d_k": "attention", "Mask": "mask", "Causal mask": "mask", "Softmax": "attention",
    "Weighted sum of values": "attention", "Heads concatenated": "projections", "Add & Norm": "add_norm",
    "Feed-forward network": "ffn", "Encoder output": "encoder", "Decoder masked self-attention": "mask",
    "Cross-attention": "cross", "Output distribution": "output", "Greedy and beam search": "greedy",
    "Next step": "next_step",
}


def show(title: str) -> None:
    """The code of the stage called ``title`` (its English title), folded; nothing for a stage without one."""
    step = STEP_OF.get(title)
    if step is None:
        return
    code, t = lessons.implementation(step), language.words("lesson-code")
    label = (t("label_annotated", name=code.name, annotated=code.annotated) if code.annotated
             else t("label", name=code.name))
    if box := presentation.opened(label, f"lesson_code_{step}", icon=":material/code:"):
        with box:
            st.caption(t("where", path=code.path, line=code.line))
            st.code(code.source, language="python", line_numbers=True, wrap_lines=True)
