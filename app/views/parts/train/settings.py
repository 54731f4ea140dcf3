"""The Train page's settings: the widgets, their defaults, and the one place where the preset,
the widgets and the overrides become a :class:`~core.training.TrainConfig`.

Sizes flow one way: choosing a preset fills the four size widgets (:func:`_on_preset_change`);
:func:`sizes` reads them back; :func:`config` keeps only the sizes that differ from the preset
as overrides (so the command stays short). Everything else on the page reads the config.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st

from app.services import catalog
from app.services.jobs import default_name, sanitize_name
from app.ui import widgets as ui
from core import device, TASKS, training

NORMS = {"post": "Post-norm (the paper)", "pre": "Pre-norm (the Annotated Transformer)"}
POSITIONALS = {"sinusoidal": "Sinusoidal (the paper)", "learned": "Learned", "none": "None"}
SCORES = {"scaled_dot": "Scaled dot product (the paper)", "dot": "Dot product", "general": "General (Luong)",
          "additive": "Additive (Bahdanau)"}
SIZE_KEYS = {"n_layers": "train_layers", "d_model": "train_d_model", "n_heads": "train_heads", "d_ff": "train_d_ff"}
BOUNDS = {"train_steps": (1, 200_000), "train_batch": (1, 1024), "train_warmup": (1, 100_000)}
URL_KEYS = {"train_task": str, "train_preset": str, "train_steps": int, "train_batch": int, "train_warmup": int,
            "train_smoothing": float}
DEFAULTS = {"train_steps": 400, "train_batch": 32, "train_warmup": 100, "train_smoothing": 0.1, "train_dropout": 0.1,
            "train_norm": "post", "train_positional": "sinusoidal", "train_score": "scaled_dot", "train_tie": False}


def _preset_widgets(preset: str) -> dict[str, int]:
    """The size widgets' values for ``preset``."""
    return {key: training.PRESETS[preset][size] for size, key in SIZE_KEYS.items()}


def sizes() -> dict[str, int]:
    """The model's sizes as the widgets now say (the preset's, or the user's changes)."""
    return {size: int(st.session_state[key]) for size, key in SIZE_KEYS.items()}


def _preset_label(preset: str) -> str:
    sizes = training.PRESETS[preset]
    return f"{preset} — {sizes['n_layers']} layer(s), d_model {sizes['d_model']}, {sizes['n_heads']} heads"


def init_state() -> None:
    """Defaults once per session, and repair values a hand-edited link may have broken."""
    state = st.session_state
    if state.get("train_task") not in TASKS:
        state["train_task"] = "reverse" if "reverse" in TASKS else next(iter(TASKS))
    if state.get("train_preset") not in training.PRESETS:
        state["train_preset"] = "small"
    for key, value in {**DEFAULTS, **_preset_widgets(state["train_preset"])}.items():
        state.setdefault(key, value)
    for key, (low, high) in BOUNDS.items():
        ui.clamped(key, low, high)
    state["train_smoothing"] = min(max(float(state["train_smoothing"]), 0.0), 0.9)
    for key in ("train_task", "train_preset", "train_smoothing"):  # a link's value replaced: said in a notice
        ui.link_checked(key, state[key])
    devices = device.available_devices()
    if state.get("train_device") not in devices:
        state["train_device"] = "cuda" if "cuda" in devices else devices[0]
    if not state.get("train_name"):
        state["train_name"] = state["_train_auto_name"] = default_name(state["train_task"])


def _on_task_change() -> None:
    """A fresh default name for the new task, unless the user typed their own."""
    state = st.session_state
    if state.get("train_name") == state.get("_train_auto_name"):
        state["train_name"] = state["_train_auto_name"] = default_name(state["train_task"])


def _on_preset_change() -> None:
    st.session_state.update(_preset_widgets(st.session_state["train_preset"]))


def widgets() -> None:
    """The settings widgets (values live in session_state under their keys)."""
    left, middle, right = st.columns(3)
    with left:
        st.selectbox("Task", list(TASKS), key="train_task", on_change=_on_task_change,
                     format_func=lambda name: f"{name} — {TASKS[name].description}",
                     help="Built-in tasks generate their own data; nothing is downloaded.")
        st.selectbox("Model size", list(training.PRESETS), key="train_preset", on_change=_on_preset_change,
                     format_func=_preset_label,
                     help="Presets fill in the advanced fields below; 'base' is the paper's base model.")
        st.text_input("Run name", key="train_name", max_chars=80,
                      help="Letters, digits, '-' and '_'; anything else becomes '-'.")
    with middle:
        st.number_input("Training steps", *BOUNDS["train_steps"], key="train_steps", step=50)
        st.number_input("Batch size", *BOUNDS["train_batch"], key="train_batch", step=8,
                        help="Examples per optimizer step.")
        st.selectbox("Device", device.available_devices(), key="train_device",
                     help="A GPU is used when this machine has one.")
    with right:
        st.number_input("Warm-up steps", *BOUNDS["train_warmup"], key="train_warmup", step=50,
                        help="The learning rate rises for this many steps, then decays.")
        st.slider("Label smoothing ε", 0.0, 0.9, key="train_smoothing", step=0.05,
                  help="How much of the target probability is spread over the other tokens (0.1 in the paper).")
    _advanced(TASKS[st.session_state["train_task"]].architecture == "encoder")


def _advanced(encoder_only: bool) -> None:
    with st.expander("Advanced: the model's shape", icon=":material/tune:"):
        a, b, c = st.columns(3)
        with a:
            st.number_input("Layers (per stack)", 1, 24, key="train_layers")
            st.number_input("d_model (width)", 1, 2048, key="train_d_model", step=16)
            st.number_input("Heads", 1, 64, key="train_heads", help="d_model must be divisible by the heads.")
        with b:
            st.number_input("d_ff (feed-forward width)", 1, 16384, key="train_d_ff", step=64)
            st.slider("Dropout", 0.0, 0.5, key="train_dropout", step=0.05)
            st.checkbox("Tie the decoder's input and output embeddings", key="train_tie", disabled=encoder_only,
                        help="Classifiers have no decoder to tie." if encoder_only else None)
        with c:
            st.radio("Normalisation", list(NORMS), key="train_norm", format_func=NORMS.get)
            st.selectbox("Positional encoding", list(POSITIONALS), key="train_positional",
                         format_func=POSITIONALS.get)
            st.selectbox("Attention score", list(SCORES), key="train_score", format_func=SCORES.get)


def schedule(steps: int) -> tuple[int, int]:
    """(validate every, snapshot every): about ten validations and twenty snapshots per run."""
    return max(25, round(steps / 10)), max(5, round(steps / 20))


def config() -> tuple[str, training.TrainConfig]:
    """The run name and TrainConfig of the current settings (checked: the model can be built).

    Raises:
        ValueError: a bad setting (the message says which).
    """
    state = st.session_state
    name = sanitize_name(state["train_name"])
    if not name:
        raise ValueError("give the run a name made of letters, digits, '-' or '_'")
    preset = state["train_preset"]
    overrides = {k: v for k, v in sizes().items() if v != training.PRESETS[preset][k]}  # keep the command short
    steps = int(state["train_steps"])
    eval_every, snapshot_every = schedule(steps)
    encoder_only = TASKS[state["train_task"]].architecture == "encoder"
    result = training.TrainConfig(
        task=state["train_task"], out=str(catalog.checkpoint_path(catalog.runs_dir(), name)), steps=steps,
        batch_size=int(state["train_batch"]), warmup=int(state["train_warmup"]),
        label_smoothing=round(float(state["train_smoothing"]), 4), preset=preset, **overrides,
        dropout=round(float(state["train_dropout"]), 4), norm=state["train_norm"],
        positional=state["train_positional"], score=state["train_score"],
        tie_embeddings=bool(state["train_tie"]) and not encoder_only, eval_every=eval_every,
        snapshot_every=snapshot_every, save_every=steps, device=state["train_device"], progress=False,
    )
    result.check()
    return name, result


def cli_command(config: training.TrainConfig) -> str:
    """``config.command()`` with the output path relative to the repository and a progress bar."""
    out = Path(config.out)
    try:
        out = out.resolve().relative_to(catalog.ROOT)
    except ValueError:
        pass
    return replace(config, out=str(out), progress=True).command()
