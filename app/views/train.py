"""Train: pick a task and a model size, see the paper's two training ideas, train live, then explore.

Training runs in a background thread owned by the process-wide job registry; this page
only starts, watches (a fragment polls about once a second) and stops jobs, so a
refresh never loses a run.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st
import torch

from app import catalog, resources, ui
from app.charts import training as charts
from app.job_registry import registry
from app.jobs import (FAILED, FINISHED, RUNNING, STOPPED, JobRefused, JobView, check, default_name,
                      sanitize_name, training_threads)
from core import KIND_LABELS, PRESETS, TASKS, TrainConfig, available_devices

POLL_S = 1.0
NORMS = {"post": "Post-norm (the paper)", "pre": "Pre-norm (the Annotated Transformer)"}
POSITIONALS = {"sinusoidal": "Sinusoidal (the paper)", "learned": "Learned", "none": "None"}
SCORES = {"scaled_dot": "Scaled dot product (the paper)", "dot": "Dot product", "general": "General (Luong)",
          "additive": "Additive (Bahdanau)"}
STATUS = {RUNNING: ":material/progress_activity: training", FINISHED: ":material/check_circle: finished",
          STOPPED: ":material/stop_circle: stopped", FAILED: ":material/error: failed"}
SIZES = ("train_layers", "train_d_model", "train_heads", "train_d_ff")
BOUNDS = {"train_steps": (1, 200_000), "train_batch": (1, 1024), "train_warmup": (1, 100_000)}
URL_KEYS = {"train_task": str, "train_preset": str, "train_steps": int, "train_batch": int, "train_warmup": int,
            "train_smoothing": float}


# ----------------------------------------------------------------------------- settings
def _preset_sizes(preset: str) -> dict[str, int]:
    sizes = PRESETS[preset]
    return dict(zip(SIZES, (sizes["n_layers"], sizes["d_model"], sizes["n_heads"], sizes["d_ff"])))


def _preset_label(preset: str) -> str:
    sizes = PRESETS[preset]
    return f"{preset} — {sizes['n_layers']} layer(s), d_model {sizes['d_model']}, {sizes['n_heads']} heads"


def _init_state() -> None:
    """Defaults once per session, and repair values a hand-edited link may have broken."""
    state = st.session_state
    if state.get("train_task") not in TASKS:
        state["train_task"] = "reverse" if "reverse" in TASKS else next(iter(TASKS))
    if state.get("train_preset") not in PRESETS:
        state["train_preset"] = "small"
    defaults = {"train_steps": 400, "train_batch": 32, "train_warmup": 100, "train_smoothing": 0.1,
                "train_dropout": 0.1, "train_norm": "post", "train_positional": "sinusoidal",
                "train_score": "scaled_dot", "train_tie": False, **_preset_sizes(state["train_preset"])}
    for key, value in defaults.items():
        state.setdefault(key, value)
    for key, (low, high) in BOUNDS.items():
        state[key] = min(max(int(state[key]), low), high)
    state["train_smoothing"] = min(max(float(state["train_smoothing"]), 0.0), 0.9)
    devices = available_devices()
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
    st.session_state.update(_preset_sizes(st.session_state["train_preset"]))


def _settings() -> None:
    """The settings widgets (values live in session_state under their keys)."""
    left, middle, right = st.columns(3)
    with left:
        st.selectbox("Task", list(TASKS), key="train_task", on_change=_on_task_change,
                     format_func=lambda name: f"{name} — {TASKS[name].description}",
                     help="Built-in tasks generate their own data; nothing is downloaded.")
        st.selectbox("Model size", list(PRESETS), key="train_preset", on_change=_on_preset_change,
                     format_func=_preset_label,
                     help="Presets fill in the advanced fields below; 'base' is the paper's base model.")
        st.text_input("Run name", key="train_name", max_chars=80,
                      help="Letters, digits, '-' and '_'; anything else becomes '-'.")
    with middle:
        st.number_input("Training steps", *BOUNDS["train_steps"], key="train_steps", step=50)
        st.number_input("Batch size", *BOUNDS["train_batch"], key="train_batch", step=8,
                        help="Examples per optimizer step.")
        st.selectbox("Device", available_devices(), key="train_device",
                     help="A GPU is used when this machine has one.")
    with right:
        st.number_input("Warm-up steps", *BOUNDS["train_warmup"], key="train_warmup", step=50,
                        help="The learning rate rises for this many steps, then decays.")
        st.slider("Label smoothing ε", 0.0, 0.9, key="train_smoothing", step=0.05,
                  help="How much of the target probability is spread over the other tokens (0.1 in the paper).")
    encoder_only = TASKS[st.session_state["train_task"]].architecture == "encoder"
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


def _schedule(steps: int) -> tuple[int, int]:
    """(validate every, snapshot every): about ten validations and twenty snapshots per run."""
    return max(25, round(steps / 10)), max(5, round(steps / 20))


def _config() -> tuple[str, TrainConfig]:
    """The run name and TrainConfig of the current settings.

    Raises:
        ValueError: a bad setting (the message says which).
    """
    state = st.session_state
    name = sanitize_name(state["train_name"])
    if not name:
        raise ValueError("give the run a name made of letters, digits, '-' or '_'")
    preset = state["train_preset"]
    sizes = PRESETS[preset]
    chosen = {"n_layers": state["train_layers"], "d_model": state["train_d_model"],
              "n_heads": state["train_heads"], "d_ff": state["train_d_ff"]}
    overrides = {k: int(v) for k, v in chosen.items() if int(v) != sizes[k]}  # keep the command short
    eval_every, snapshot_every = _schedule(int(state["train_steps"]))
    encoder_only = TASKS[state["train_task"]].architecture == "encoder"
    config = TrainConfig(
        task=state["train_task"], out=str(catalog.runs_dir() / f"{name}.safetensors"),
        steps=int(state["train_steps"]), batch_size=int(state["train_batch"]), warmup=int(state["train_warmup"]),
        label_smoothing=round(float(state["train_smoothing"]), 4), preset=preset, **overrides,
        dropout=round(float(state["train_dropout"]), 4), norm=state["train_norm"],
        positional=state["train_positional"], score=state["train_score"],
        tie_embeddings=bool(state["train_tie"]) and not encoder_only, eval_every=eval_every,
        snapshot_every=snapshot_every, save_every=int(state["train_steps"]), device=state["train_device"],
        progress=False,
    )
    check(config)
    return name, config


def _start() -> None:
    """Train button callback: start the job, then offer a fresh name for the next run."""
    state = st.session_state
    try:
        name, config = _config()
        if Path(config.out).exists():
            raise ValueError(f"a run called {name!r} already exists; choose another name "
                             "(or delete the old run on the Checkpoints page)")
        registry().start(name, config)
    except (ValueError, JobRefused) as error:
        state["_train_message"] = f"Could not start training: {error}"
        return
    state["_train_message"] = None
    state["train_name"] = state["_train_auto_name"] = default_name(state["train_task"])


def _cli_command(config: TrainConfig) -> str:
    """``config.command()`` with the output path relative to the repository and a progress bar."""
    out = Path(config.out)
    try:
        out = out.resolve().relative_to(catalog.ROOT)
    except ValueError:
        pass
    return replace(config, out=str(out), progress=True).command()


# ----------------------------------------------------------------------------- teaching plots
def _teaching_plots(d_model: int, warmup: int, steps: int, smoothing: float) -> None:
    scale = ui.font_scale()
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Warm-up, then decay.** Adam starts with tiny steps while its statistics settle, "
                    "speeds up linearly for the warm-up, then slows down with the inverse square root of the step.")
        st.latex(r"\mathrm{lrate} = d_{\mathrm{model}}^{-0.5}\cdot"
                 r"\min\!\left(\mathrm{step}^{-0.5},\ \mathrm{step}\cdot\mathrm{warmup}^{-1.5}\right)")
        frame = charts.noam_frame(steps, d_model, warmup)
        peak = charts.noam_peak(steps, d_model, warmup)
        chart = charts.noam_chart(frame, peak, d_model=d_model, warmup=warmup, font_scale=scale)
        st.altair_chart(chart, width="content")
        a, b = st.columns(2)
        a.metric("Peak learning rate", f"{peak[1]:.3e}")
        b.metric("Reached at step", f"{peak[0]:,}")
        if warmup > steps:
            st.caption("The warm-up is longer than the run: the rate is still rising when training ends.")
        c, d = st.columns(2)
        with c:
            ui.export_chart(chart, "noam-schedule", key="train_noam_chart")
        with d:
            ui.export_data({"step": frame["step"].to_numpy(), "lr": frame["lr"].to_numpy()}, frame,
                           "noam-schedule", key="train_noam_data")
    with right:
        st.markdown("**Label smoothing.** The loss does not ask for 100 % on the right token: it keeps "
                    "1 − ε there and spreads ε over the other tokens (never onto padding). The model "
                    "becomes less over-confident, which helps accuracy and BLEU.")
        st.latex(r"q(k) = \begin{cases} 1-\varepsilon & k = \text{target}\\[2pt]"
                 r"\dfrac{\varepsilon}{V-2} & k \neq \text{target},\ k \neq \text{pad}\\[2pt]"
                 r"0 & k = \text{pad (and rows whose target is pad)}\end{cases}")
        matrix, rows, cols = charts.smoothing_matrix(smoothing)
        chart = charts.smoothing_chart(matrix, rows, cols, smoothing=smoothing, font_scale=scale)
        st.altair_chart(chart, width="content")
        st.caption(f"A {len(cols)}-token vocabulary (V = {len(cols)}), five training targets; "
                   "the last target is padding, so it counts for nothing.")
        table = pd.DataFrame(matrix, index=rows, columns=cols)
        with st.popover("The numbers", icon=":material/table:"):
            st.dataframe(table.style.format("{:.3f}"), key="train_smoothing_table")
        c, d = st.columns(2)
        with c:
            ui.export_chart(chart, "label-smoothing", key="train_smoothing_chart")
        with d:
            ui.export_data({"targets": matrix}, table.reset_index(names="example"), "label-smoothing",
                           key="train_smoothing_data")


# ----------------------------------------------------------------------------- jobs
def _pick(label: str, n: int, key: str) -> int:
    """A 1-based slider over ``n`` items, returned 0-based (no slider when there is only one)."""
    if n <= 1:
        st.caption(f"{label}: 1 of 1")
        return 0
    if st.session_state.get(key, 1) > n:
        st.session_state[key] = n
    return st.slider(label, 1, n, key=key) - 1


def _live_map(view: JobView, suffix: str) -> None:
    """The probe input's attention as the model learns (the latest snapshot)."""
    if not view.snapshot:
        st.caption("The first attention snapshot is being taken…")
        return
    kinds = list(view.snapshot)
    if st.session_state.get(f"train_kind{suffix}") not in kinds:
        st.session_state[f"train_kind{suffix}"] = kinds[-1]
    a, b, c = st.columns(3)
    with a:
        kind = st.selectbox("Attention", kinds, key=f"train_kind{suffix}", format_func=KIND_LABELS.get)
    maps = view.snapshot[kind]  # (L, H, Tq, Tk)
    with b:
        layer = _pick("Layer", maps.shape[0], f"train_layer{suffix}")
    with c:
        head = _pick("Head", maps.shape[1], f"train_head{suffix}")
    matrix = maps[layer, head]
    rows, cols = charts.snapshot_axes(kind, view.source_tokens or (), view.target_tokens or ())
    if (len(rows), len(cols)) != matrix.shape:  # tokens arrive with the first checkpoint: positions until then
        rows, cols = ["?"] * matrix.shape[0], ["?"] * matrix.shape[1]
    probe = TASKS[view.config.task].probe
    chart = charts.attention_map(matrix, rows, cols, font_scale=ui.font_scale(),
                                 title=f"{KIND_LABELS.get(kind, kind)} · layer {layer + 1}, head {head + 1} · "
                                       f"step {view.snapshot_step}")
    st.altair_chart(chart, width="content")
    ui.show_user_text(probe, label="Probe input (the same sentence at every snapshot):")
    if view.source_tokens is None:
        st.caption("Token labels appear after the first validation, when the first checkpoint is written.")


def _curves(view: JobView) -> None:
    scale = ui.font_scale()
    left, right = st.columns(2)
    with left:
        if view.steps:
            st.altair_chart(charts.loss_chart(view.steps, view.losses, font_scale=scale), width="content")
        else:
            st.caption("The loss appears after the first step.")
    with right:
        frame = charts.history_frame(view.evaluations)
        if not frame.empty:
            st.altair_chart(charts.validation_chart(frame, font_scale=scale), width="content")
        else:
            every, _ = _schedule(view.total_steps)
            st.caption(f"Validation runs every {min(every, view.total_steps)} steps; its scores appear here.")


def _job_panel(view: JobView, suffix: str) -> None:
    """Everything about one job: progress, numbers, curves, the live map, and its controls."""
    # Run names are sanitised to [A-Za-z0-9_-]; in backticks they are shown literally.
    st.markdown(f"**Run** `{view.name}` · {STATUS[view.status]} · task {view.config.task}, "
                f"{view.config.preset} preset, {view.config.steps:,} steps")
    if view.status == RUNNING:
        text = ("Stopping: validating and saving the checkpoint…" if view.stop_requested
                else f"Step {view.step:,} of {view.total_steps:,}")
        st.progress(view.progress, text=text)
    elif view.status == FAILED:
        st.error(f"Training failed: {view.error}")
    elif view.status == STOPPED:
        st.info(f"Stopped at step {view.step:,}; the best validated model so far was saved.")
    else:
        st.success(f"Finished {view.step:,} steps in {view.elapsed:,.0f} s. The saved checkpoint is the "
                   "best model seen at a validation.")
    a, b, c, d = st.columns(4)
    a.metric("Step", f"{view.step:,} / {view.total_steps:,}")
    b.metric("Loss", f"{view.losses[-1]:.3f}" if view.losses else "—")
    c.metric("Tokens / s", f"{view.tokens_per_s:,.0f}" if view.steps else "—")
    d.metric("Elapsed", f"{view.elapsed:,.0f} s")
    if view.status == RUNNING:
        st.button("Stop", key=f"train_stop{suffix}", icon=":material/stop:", disabled=view.stop_requested,
                  on_click=registry().stop, args=(view.name,),
                  help="Stops after the current step, validates, and keeps a usable checkpoint.")
    _curves(view)
    _live_map(view, suffix)
    if view.result is not None and view.result.metrics.get("test"):
        test = view.result.metrics["test"]
        st.caption("Test: " + ", ".join(f"{charts.METRIC_NAMES.get(k, k)} {v:.3f}" for k, v in test.items()))


def _choose(key: str) -> None:
    resources.entries.clear()
    st.session_state["ckpt"] = key


def _done_controls(view: JobView, suffix: str) -> None:
    """Explore the finished run, open it on the Checkpoints page, or forget it."""
    key = f"run:{view.name}"
    entry = resources.entry(key)
    usable = entry is not None and entry.path.resolve() == view.out.resolve()
    a, b, c = st.columns(3)
    with a:
        if st.button("Explore this model", key=f"train_explore{suffix}", type="primary", disabled=not usable,
                     icon=":material/visibility:", on_click=_choose, args=(key,)):
            st.switch_page("views/explore.py")
    with b:
        if st.button("Timeline and details", key=f"train_details{suffix}", disabled=not usable,
                     icon=":material/inventory_2:", on_click=_choose, args=(key,)):
            st.switch_page("views/checkpoints.py")
    with c:
        st.button("Remove from this list", key=f"train_forget{suffix}", on_click=registry().forget,
                  args=(view.name,), help="The checkpoint stays; only this panel goes.")
    if not usable and view.status != FAILED:
        st.caption("No checkpoint of this run is available (it may have been deleted).")


def _acknowledge(views: list[JobView]) -> bool:
    """True (once per finished job and session) when a job finished since this session last looked."""
    seen = st.session_state.setdefault("_train_seen_done", set())
    fresh = [v for v in views if v.done and (v.name, v.started) not in seen]
    seen.update((v.name, v.started) for v in fresh)
    return bool(fresh)


def _jobs() -> None:
    jobs = registry().jobs()
    if not jobs:
        st.caption("No training runs yet in this server session. Finished runs stay in the checkpoint picker.")
        return
    views = [j.view() for j in jobs]
    if _acknowledge(views):  # a run finished: let the sidebar list its checkpoint
        resources.entries.clear()
        st.rerun()
    running = any(v.status == RUNNING for v in views)

    @st.fragment(run_every=POLL_S if running else None)
    def live(name: str, suffix: str) -> None:
        job = registry().get(name)
        if job is None:
            return
        view = job.view()
        if view.done:
            resources.entries.clear()
            st.rerun()  # the whole page: the finished panel, and the sidebar's picker
        _job_panel(view, suffix)

    for i, view in enumerate(views):
        suffix = "" if i == 0 else f"_{view.name}"
        with st.container(border=True):
            if view.status == RUNNING:
                live(view.name, suffix)
            else:
                with st.expander(f"`{view.name}` · {view.status}") if i else st.container():
                    _job_panel(view, suffix)
                    _done_controls(view, suffix)


# ----------------------------------------------------------------------------- page
ui.restore_from_url(URL_KEYS)
_init_state()

st.title("Train a Transformer")
st.caption("Pick a task and a model size, look at how the paper trains, then train and watch attention form. "
           "Short runs belong here; long ones to the command line (below).")

_settings()
try:
    name, config = _config()
except ValueError as error:
    name = config = None
    st.error(f"Check the settings: {error}")

busy = registry().running()
sizes = config.architecture() if config else {"d_model": int(st.session_state["train_d_model"])}
with st.expander("**Before training: two ideas from the paper**", expanded=not registry().jobs(),
                 icon=":material/school:"):
    _teaching_plots(max(1, sizes["d_model"]), int(st.session_state["train_warmup"]),
                    int(st.session_state["train_steps"]), float(st.session_state["train_smoothing"]))

st.subheader("Train")
if config is not None:
    eval_every, snapshot_every = _schedule(config.steps)
    arch = TASKS[config.task].architecture
    st.caption(f"{arch} model · {sizes['n_layers']} layer(s) per stack, d_model {sizes['d_model']}, "
               f"{sizes['n_heads']} heads of width {sizes['d_model'] // sizes['n_heads']}, d_ff {sizes['d_ff']} · "
               f"validation every {min(eval_every, config.steps)} steps, attention snapshot every "
               f"{snapshot_every} · saved as runs/{name}.safetensors · {training_threads()} CPU thread(s) "
               "for training, so the app stays responsive.")
    if config.device == "cpu" and config.preset in ("medium", "base") and config.steps > 200:
        st.caption(":material/info: This model is large for a CPU: expect minutes per hundred steps. "
                   "The command line with a GPU suits it better.")
    if Path(config.out).exists():
        st.warning(f"A run called {name!r} already exists; choose another name to train again.")
if busy:
    st.info(f"{', '.join(j.name for j in busy)} is training. This machine trains one model at a time: "
            "wait for it to finish or stop it.", icon=":material/hourglass_top:")
st.button("Train", key="train_start", type="primary", icon=":material/play_arrow:", on_click=_start,
          disabled=config is None or bool(busy) or Path(config.out).exists())
if st.session_state.get("_train_message"):
    st.error(st.session_state.pop("_train_message"))

_jobs()

if config is not None:
    with st.expander("Long runs: the same training on the command line", icon=":material/terminal:"):
        command = _cli_command(config)
        st.caption("Run from the repository root. The checkpoint lands in runs/ and appears in the picker. "
                   "Add --resume to continue a run that was interrupted.")
        st.code(command, language="bash", wrap_lines=True)
        gpus = max(2, torch.cuda.device_count())
        st.caption("Several GPUs on one machine (DistributedDataParallel): set --nproc_per_node to their number.")
        st.code(command.replace("python -m core train", f"torchrun --nproc_per_node={gpus} -m core train", 1),
                language="bash", wrap_lines=True)

ui.write_to_url(list(URL_KEYS))
