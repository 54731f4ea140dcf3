"""The Explore page's input and output: the checkpoint header, the text, decoding options, the tokens
the model read, its prediction, and the share link.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app.services import catalog
from app.ui import widgets
from app.charts import attention as charts
from app.charts import confidence
from core import (Checkpoint, COVERAGE_THRESHOLD, Explanation, get_task, input_vocabulary, ModelFacts,
                  trained_lengths_note, untranslated)

URL_KEYS = ["text", "kind", "layer", "head", "view", "map", "decoding"]
URL_PARSERS = {"text": str, "kind": str, "layer": int, "head": int, "view": str, "map": str, "decoding": str,
               "causal": widgets.parse_bool, "hard": widgets.parse_bool, "beta": widgets.bounded(0.0, 5.0, float),
               "padding": widgets.parse_bool, "knockout": lambda text: [x for x in text.split(",") if x]}
# The interventions travel in the link only when they differ from the model as trained.
INTERVENTIONS = {"causal": True, "hard": False, "beta": 1.0, "padding": True, "knockout": []}
DECODINGS = {"greedy": "Greedy", "beam": "Beam search"}
MAX_URL_TEXT = 500  # longer text is left out of the share link
UNK = "<unk>"
MAX_TABLE_TOKENS = 64
PREDICTION = "prediction"  # the key of the prediction's box


# ----------------------------------------------------------------------------- header and input
def header(entry: catalog.Entry, config: Any) -> None:
    """The checkpoint's description, test metric and shape."""
    enc, dec = getattr(config, "n_encoder_layers", 0), getattr(config, "n_decoder_layers", 0)  # pretrained: one
    layers = {"encoder-decoder": f"{enc} encoder + {dec} decoder layers", "encoder": f"{enc} encoder layers",
              "decoder": f"{dec} decoder layers"}[config.architecture]
    st.markdown(f"**{widgets.plain(entry.name)}** — {widgets.plain(entry.description)}")
    st.caption(f"{config.architecture} · {layers} · {config.n_heads} heads · d_model {config.d_model} · "
               f"{entry.metric or 'no test metric recorded'}")


def _use_example() -> None:
    choice = st.session_state.get("example")
    if choice:
        st.session_state["text"] = choice
    st.session_state["example"] = None


def text_input(entry: catalog.Entry) -> str:
    """Example pills and the text area; returns the text to explain."""
    try:
        examples = list(get_task(entry.task).examples) if entry.task else []
    except ValueError:
        examples = []
    previous = st.session_state.get("_explore_examples")
    switched = previous is not None and previous != examples and st.session_state.get("text") in previous
    if "text" not in st.session_state or (switched and examples):
        st.session_state["text"] = examples[0] if examples else ""  # a new task starts on its own example
    st.session_state["_explore_examples"] = examples
    if examples:
        st.pills("Try an example", examples, key="example", on_change=_use_example)
    return st.text_area("Input text", key="text", height=90, placeholder="Type a sentence…")


def base_options(architecture: str) -> dict[str, Any]:
    """Decoding controls (seq2seq) or continuation (language model) → explain options."""
    options: dict[str, Any] = {}
    if architecture == "encoder-decoder":
        left, right = st.columns(2)
        widgets.choose("decoding", list(DECODINGS), "greedy")
        with left:
            st.segmented_control("Decoding", list(DECODINGS), key="decoding", required=True,
                                 format_func=DECODINGS.get,
                                 help="Greedy takes the most likely token each step; beam search keeps several "
                                      "candidate outputs and returns the most likely one.")
        options["decoding"] = st.session_state["decoding"]
        if options["decoding"] == "beam":
            with right:
                options["beam_size"] = st.slider("Beam size", 2, 8, 4, key="beam_size")
    elif architecture == "decoder":
        options["continuation"] = st.slider("Continue for this many tokens", 0, 20, 0, key="continuation",
                                            help="Let the language model keep writing after your text.")
    if st.session_state.get("show_scores"):
        options["return_scores"] = True  # only then: scores need a separate (cached) run
    return options


def default_options(architecture: str) -> dict[str, Any]:
    """The explain options of a fresh session (what :func:`base_options` returns before any change)."""
    return {"encoder-decoder": {"decoding": "greedy"}, "decoder": {"continuation": 0}}.get(architecture, {})


def tokens(exp: Explanation) -> None:
    """The tokens the model read, as a table of chips; unknown tokens flagged; notes."""
    items = exp.source_tokens or exp.target_tokens
    shown = [("⚠ " + UNK) if t == UNK else charts.visible(t) for t in items]
    typed = continuation_start(exp)
    shown = [t if i < typed else "✎ " + t for i, t in enumerate(shown)]
    if len(shown) > MAX_TABLE_TOKENS:  # a long input: the table shows its start, the charts all of it
        st.info(f"The table shows the first {MAX_TABLE_TOKENS} of {len(shown):,} tokens; the attention charts "
                "below cover every token.", icon=":material/zoom_out_map:")
        shown = shown[:MAX_TABLE_TOKENS]
    frame = pd.DataFrame([shown], columns=[str(i) for i in range(len(shown))], index=["token"])
    marked = any(t.startswith(("⚠", "✎")) for t in shown)  # a Styler only when a chip needs it (36 ms a draw)
    st.table(frame.style.map(lambda v: "background-color: #fdae61; color: #000; font-weight: 700"
                             if v.startswith("⚠") else ("font-style: italic; color: #1f77b4" if v.startswith("✎")
                                                        else "")) if marked else frame)
    unknown = items.count(UNK)
    written = len(items) - typed
    st.caption(f"{len(items)} tokens" + (f" · {unknown} unknown to the model (⚠)" if unknown else "")
               + (f" · the last {written} (✎) were written by the model, not typed by you" if written else ""))
    read = exp.text
    ends = [end for _, end in (exp.source_offsets or exp.target_offsets) if end]
    if exp.truncated and ends:
        read = exp.text[:max(ends)]
    preview = read if len(read) <= 300 else read[:300] + " …"
    widgets.show_user_text(preview, "The model read:" if not exp.truncated else
                           f"The model read only the first {len(read):,} of {len(exp.text):,} characters:")


def notes(exp: Explanation) -> None:
    """What happened to the input before the model read it (lower-cased, cut at the trained length, …)."""
    for note in exp.notes:
        st.warning(widgets.plain(note), icon=":material/info:")


def continuation_start(exp: Explanation) -> int:
    """The position of the first token a language model wrote itself (the token count when none did)."""
    if exp.source_tokens or not exp.options.get("continuation"):
        return len(exp.source_tokens or exp.target_tokens)
    read = [i for i, (_, end) in enumerate(exp.target_offsets) if end]
    return (read[-1] + 1) if read else len(exp.target_tokens)


def prediction(exp: Explanation, font_scale: float) -> None:
    """What the model predicts, as its kind says: generated text (each token over its probability,
    marked unreliable when the input had words it does not know), class probabilities, masked-word
    fill-ins, a label per token, a sentence embedding, or the next-token candidates."""
    pred = exp.prediction
    unsure = confidence.unreliable_message(exp.unknown_words, _unknown_token(exp))
    if unsure and pred.kind in ("text", "next_token", "class"):
        st.warning(unsure, icon=":material/help:")
    if pred.kind == "text":
        missing = untranslated(exp) if exp.task == "translation" else ()  # the flag was set on that model
        st.caption("Generated output" + (" (unreliable: see above)" if unsure else
                                         " (less reliable: see below)" if missing else ""))
        widgets.output_text(pred.text or "(empty)", key=PREDICTION)
        if missing:
            st.warning(not_translated_message([word.word for word in missing]), icon=":material/rule:")
        if scope := _scope(exp):
            st.caption(widgets.plain(scope))
        if not pred.finished:
            st.caption("The output hit the length limit before an end-of-sequence token.")
        _confidence(exp)
        return
    if pred.kind in ("class", "fill"):
        st.caption("Predicted class" if pred.kind == "class" else "The input with every mask filled in")
        widgets.output_text(pred.text, key=PREDICTION)
        title, axis = ("Class probabilities", "class") if pred.kind == "class" else ("Candidates for the first "
                                                                                     "mask", "token")
        widgets.candidate_bars(pred.labels, pred.probabilities, title=title, x_title=axis, font_scale=font_scale)
        return
    if pred.kind in ("tokens", "embedding"):
        st.caption("A label for every token" if pred.kind == "tokens" else "Sentence embedding")
        widgets.output_text(pred.text, key=PREDICTION)
        if pred.kind == "embedding":
            st.caption("An encoder without a task head gives one vector per sentence: compare two sentences "
                       "below, or explore where each token looks.")
        return
    st.caption("Most likely next token" + (" and continuation" if exp.options.get("continuation") else ""))
    widgets.output_text(charts.visible(pred.text), key=PREDICTION)  # a space or newline must not look like nothing
    widgets.candidate_bars(pred.labels, pred.probabilities, title="Next-token candidates", x_title="next token",
                           font_scale=font_scale)


def not_translated_message(words: list[str]) -> str:
    """The words the output barely attended to, marked "not translated?" (Markdown-escaped)."""
    shown = ", ".join(f"“{widgets.plain(word)}”" for word in words)
    them = "them" if len(words) > 1 else "it"
    return (f"Not translated? {shown}: the output's cross-attention to {them} (last layer, summed over the "
            f"output) is under {COVERAGE_THRESHOLD:.2f}, where a translated word draws about 1. The output may "
            f"have left {them} out.")


def _scope(exp: Explanation) -> str:
    """What a built-in task's model is and where its knowledge ends ("" for other models)."""
    try:
        return get_task(exp.task).scope if exp.task else ""
    except ValueError:
        return ""


def _unknown_token(exp: Explanation) -> str:
    """How the model shows a word it does not know (its own unknown token, as it appears in the input)."""
    known = {word for word, _ in exp.unknown_words}
    shown = [t for t, (a, b) in zip(exp.source_tokens or exp.target_tokens,
                                    exp.source_offsets or exp.target_offsets) if exp.text[a:b].lower() in known]
    return shown[0] if shown else "an unknown token"


def _confidence(exp: Explanation) -> None:
    """Each generated token over a bar of the model's probability for it (end and padding left out)."""
    if exp.token_probabilities is None:
        return
    produced = [(t, p) for t, p in zip(exp.generated_tokens, exp.token_probabilities) if p > 0]
    if produced:
        tokens, probs = zip(*produced)
        st.html(confidence.token_confidence(tokens, np.asarray(probs)))


# ----------------------------------------------------------------------------- share link
def intervened(state: Mapping[str, Any] | None = None) -> bool:
    """Whether any intervention in ``state`` (the session's by default) differs from the model as trained
    (e.g. restored from a link)."""
    state = st.session_state if state is None else state
    return any(state.get(k, v) != v for k, v in INTERVENTIONS.items())


def share(text: str) -> None:
    """Mirror the page state, interventions included, into the URL; very long text is left out of the link."""
    keys = [k for k in URL_KEYS if k != "text" or len(text) <= MAX_URL_TEXT]
    if "text" not in keys:
        st.query_params.pop("text", None)
    changed = [k for k, v in INTERVENTIONS.items() if k in st.session_state and st.session_state[k] != v]
    for key in INTERVENTIONS:
        if key not in changed:
            st.query_params.pop(key, None)
    widgets.write_to_url(keys + changed)


def vocabulary(ckpt: Any) -> None:
    """The words a small checkpoint knows (what a class can type) and the input lengths it was trained on."""
    if not isinstance(ckpt, (Checkpoint, ModelFacts)) or ckpt.info is None:  # pretrained models know tens of
        return  # thousands of sub-words
    trained = trained_lengths_note(ckpt.info.task)
    if trained:
        st.caption(trained)
    words = input_vocabulary(ckpt.source_tokenizer or ckpt.target_tokenizer)
    st.caption(f"The model's vocabulary ({len(words):,} tokens): what you can type")
    st.text(" · ".join(words))  # read from the checkpoint file: shown as text
