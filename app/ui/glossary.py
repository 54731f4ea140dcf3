"""Words the teaching pages share, defined once so every page says the same thing.

β is only ever the inverse temperature; the LayerNorm's learned shift is called "shift b".
"""

from __future__ import annotations

import inspect
from typing import Callable

import streamlit as st

from app.ui import presentation

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


# Where the lecture notes (shared/seeds) print a formula with a typo, the page using the correct form says so.
NOTES_ERRATA = {
    "pe_index": "Notes 000 print the sine row as E(p, 2); it is E(p, 2i), one row per even dimension 2i.",
    "pe_odd_exponent": "Notes 001 print the cosine's exponent as `10000^{2i+1/d_{model}}` (literally 2i + 1/d_model, "
                       "no parentheses); the paper (and this app) use 2i/d_model for both dimensions of a pair, "
                       "which is what makes each pair rotate. Notes 001 and 002 also call i the dimension: it is "
                       "the pair's index, and the pair's dimensions are 2i and 2i + 1.",
    "w_o_shape": "Notes 001 print W^O ∈ ℝ^{h·d_v × d_k}; it is ℝ^{h·d_v × d_model}: it maps the concatenated "
                 "heads back to the model's width (notes 002 have it right).",
    "cross_sources": "Notes 004 say that in the decoder Q comes from the encoder output and K, V from the decoder "
                     "input; it is the other way round: the decoder asks the queries, the encoder output gives "
                     "the keys and values.",
}
# Where the notes contradict themselves or the paper (not a typo): the page teaching it says so.
NOTES_CONFLICTS = {
    "add_norm_order": "Notes 004 print output = LayerNorm(x + Sublayer(x)) (post-norm, the paper's), but the "
                      "`SublayerConnection.forward` printed right under it returns x + dropout(sublayer(norm(x))) "
                      "(pre-norm: \"norm first … for code simplicity\"), and their `Encoder.forward` ends in a final "
                      "`self.norm(x)`. The formula and the code differ; the radio above switches between the two.",
    "example_direction": "Notes 001's overview sends the Spanish \"Yo tengo gatos\" to the encoder and has the decoder "
                         "learn \"I love cats\" (tengo is *have*, not *love*); their later section, like this app, "
                         "translates English → Spanish: \"I have cats\" → \"Yo tengo gatos\".",
    "pe_all_components": "Notes 002 end by saying the encoding is not applied to every component. It is added to "
                         "all d_model dimensions; the slow ones only look constant (≈ sin 0 = 0 and cos 0 = 1) over "
                         "a few dozen positions.",
    "classifier_code": "Notes 000's `TransformerClassifier.forward` does not run as printed: it builds `Encoder()` "
                       "and `nn.Linear(d_model, num_answers)` inside `forward` (fresh random weights on every call; "
                       "build them in `__init__`), and `torch.max(x, dim=1)` returns a (values, indices) pair "
                       "(write `x, _ = torch.max(x, dim=1)`).",
}


def erratum(key: str) -> None:
    """Flag a typo in the lecture notes beside the app's (correct) formula, or a place where the notes
    contradict themselves (:data:`NOTES_CONFLICTS`)."""
    if key in NOTES_CONFLICTS:
        st.caption(f":warning: **The notes disagree here.** {NOTES_CONFLICTS[key]}")
    else:
        st.caption(f":warning: **Typo in the notes.** {NOTES_ERRATA[key]}")


def code_key(function: Callable) -> str:
    """The key of :func:`show_code`'s expander for ``function`` (its open state in the session)."""
    return f"code-{function.__module__}.{function.__qualname__}"


def show_code(function: Callable, label: str | None = None) -> None:
    """An expander quoting the source of the public ``core`` function that computes this formula; the source
    is sent only once it is opened (a closed one costs the page no code highlighter)."""
    name = f"{function.__module__}.{function.__qualname__}"
    if box := presentation.opened(label or f"The code: {name}", code_key(function), icon=":material/code:"):
        with box:
            st.code(inspect.getsource(function), language="python")
