"""Let a language model write (SmolLM2's page, and Explore for every decoder): a form of decoding
settings — new tokens, greedy or sampled, and the sampler's temperature, top-k, top-p and seed — then
the continuation and its steps (:func:`steps.steps_view`).

The form only reruns on "Generate": moving a slider runs nothing. The run goes through
``resources.explain_entry`` (gated, cached per text and options), a run of its own: the page's other
views keep their explanation. Widget keys start with a ``prefix`` (``smol`` on SmolLM2's page).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from app import resources
from app.services import catalog
from app.ui import widgets
from app.views.parts.pretrained.steps import steps_view

DECODINGS = {"greedy": "Greedy (most likely)", "sample": "Sampled"}
DEFAULTS = {"tokens": 6, "decoding": "greedy", "temperature": 0.8, "top_k": 40, "top_p": 1.0, "seed": 0}


def decoding_options(tokens: int, decoding: str, temperature: float, top_k: int, top_p: float,
                     seed: int) -> dict[str, Any]:
    """The explain options of a form's settings. Greedy, and sampling at temperature 0 (always the most
    likely token), ask for the same greedy run; top-p 1 (the whole distribution) is left out."""
    options: dict[str, Any] = {"continuation": int(tokens)}
    if decoding == "sample" and temperature > 0:
        options.update(decoding="sample", sample_temperature=round(float(temperature), 3), top_k=int(top_k),
                       seed=int(seed))
        if top_p < 1:
            options["top_p"] = round(float(top_p), 3)
    return options


def _form(prefix: str, max_tokens: int) -> dict[str, Any] | None:
    """The decoding form; the options of its settings when "Generate" was pressed on this run, else None."""
    for name, value in DEFAULTS.items():
        st.session_state.setdefault(f"{prefix}_{name}", value)
    with st.form(f"{prefix}_form"):
        left, middle, right = st.columns(3)
        with left:
            tokens = st.slider("New tokens", 1, max_tokens, key=f"{prefix}_tokens")
            decoding = st.radio("Decoding", list(DECODINGS), format_func=DECODINGS.get, key=f"{prefix}_decoding",
                                horizontal=True)
        with middle:
            temperature = st.slider("Sampling temperature", 0.0, 2.0, step=0.1, key=f"{prefix}_temperature",
                                    help="Below 1 sharpens the probabilities, above 1 flattens them; 0 always takes "
                                         "the most likely token, as greedy does (sampling only).")
            top_k = st.slider("Sample from the top k", 1, 100, key=f"{prefix}_top_k",
                              help="Only the k most likely tokens may be drawn (1: greedy).")
        with right:
            top_p = st.slider("Top p (nucleus)", 0.05, 1.0, step=0.05, key=f"{prefix}_top_p",
                              help="Then only the most likely tokens whose probabilities add up to p (1: all).")
            seed = st.number_input("Seed", 0, 2**31 - 1, key=f"{prefix}_seed",
                                   help="The same seed draws the same tokens again.")
        generate = st.form_submit_button("Generate", icon=":material/play_arrow:", type="primary")
    return decoding_options(tokens, decoding, temperature, top_k, top_p, seed) if generate else None


def write(entry: catalog.Entry, prompt: str, prompt_length: int, fs: float, *, prefix: str = "smol",
          max_tokens: int = 20, hint: str = "Press Generate to let the model continue the text.") -> None:
    """The form, then (once "Generate" was pressed for this ``prompt``, of ``prompt_length`` tokens) the
    continuation and its steps; ``hint`` until then."""
    options = _form(prefix, max_tokens)
    if options is not None:
        st.session_state[f"{prefix}_run"] = (prompt, options)
    run = st.session_state.get(f"{prefix}_run")
    if run is None or run[0] != prompt:
        st.info(hint)
        return
    generation = widgets.attempt("generate", resources.explain_entry, entry, prompt, **run[1])
    if generation is None:
        return
    for note in generation.notes:
        st.warning(widgets.plain(note), icon=":material/info:")
    st.caption("Continuation" + (" (sampled)" if run[1].get("decoding") == "sample" else " (greedy)"))
    widgets.output_text(generation.prediction.text or "(nothing: the model ended the text at once)")
    steps_view(generation, prompt_length, fs, prefix=prefix)
