"""Checkpoints: what a model is (config, parameters, metrics, how it was trained), how its
attention formed during training, how it compares with another, and its file.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app import catalog, resources, ui
from app.charts import training as charts
from app.charts.base import matrix_frame
from app.job_registry import registry
from core import KIND_LABELS, TASKS, snapshot_maps

PLAY_S = 0.8  # seconds per frame of the timeline
INLINE_DOWNLOAD_BYTES = 16 * 1024 * 1024  # larger files are read only when the button is clicked
URL_KEYS = {"tl_step": int, "tl_kind": str, "tl_layer": int, "tl_head": int}


# ----------------------------------------------------------------------------- helpers
def _pick(label: str, n: int, key: str) -> int:
    """A 1-based slider over ``n`` items, returned 0-based (no slider when there is only one)."""
    if n <= 1:
        st.caption(f"{label}: 1 of 1")
        return 0
    if not 1 <= int(st.session_state.get(key, 1)) <= n:
        st.session_state[key] = 1
    return st.slider(label, 1, n, key=key) - 1


def _choose_kind(kinds: list[str], key: str) -> str:
    if st.session_state.get(key) not in kinds:
        st.session_state[key] = kinds[-1]  # cross-attention when there is one: the clearest to watch
    return st.selectbox("Attention", kinds, key=key, format_func=lambda k: KIND_LABELS.get(k, k))


def _code(name: str) -> str:
    """A file name as inline code, so Markdown never interprets it."""
    return "`" + name.replace("`", "'") + "`"


def _positions(matrix: np.ndarray) -> tuple[list[str], list[str]]:
    return [str(i) for i in range(matrix.shape[0])], [str(i) for i in range(matrix.shape[1])]


def _axes(kind: str, matrix: np.ndarray, source: Any, target: Any) -> tuple[list[str], list[str]]:
    rows, cols = charts.snapshot_axes(kind, list(source or ()), list(target or ()))
    return (rows, cols) if (len(rows), len(cols)) == matrix.shape else _positions(matrix)


def _show(chart, name: str, key: str, arrays: dict[str, np.ndarray] | None = None,
          table: pd.DataFrame | None = None) -> None:
    st.altair_chart(chart, width="content")
    if arrays is None:
        ui.export_chart(chart, name, key=key)
        return
    a, b = st.columns(2)
    with a:
        ui.export_chart(chart, name, key=key)
    with b:
        ui.export_data(arrays, table, name, key=f"{key}-data")


# ----------------------------------------------------------------------------- overview
def _overview(entry: catalog.Entry, ckpt) -> None:
    info = ckpt.info
    task = TASKS.get(info.task) if isinstance(info.task, str) else None
    if task is not None:
        st.markdown(f"**Task:** {_code(task.name)} — {task.description}")
    elif info.task:
        st.markdown(f"**Task:** {_code(str(info.task))} (not a built-in task)")
    else:
        st.markdown("**Task:** none recorded")
    labels = info.extra.get("labels")
    if isinstance(labels, list) and labels:
        st.caption("Classes: " + ", ".join(_code(str(label)) for label in labels))
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Configuration**")
        config = pd.DataFrame({"setting": list(asdict(info.config)),
                               "value": [str(v) for v in asdict(info.config).values()]})
        st.dataframe(config, hide_index=True, key="ckpt_config_table", height="content")
    with right:
        counts = ckpt.model.parameter_counts()
        frame = charts.parameter_frame(counts)
        st.metric("Parameters", f"{sum(counts.values()):,}")
        st.dataframe(frame, hide_index=True, key="ckpt_param_table", height="content",
                     column_config={"parameters": st.column_config.NumberColumn(format="localized"),
                                    "share": st.column_config.NumberColumn(format="percent")})
        chart = charts.parameter_chart(frame, font_scale=ui.font_scale())
        _show(chart, f"{entry.name}-parameters", "ckpt_param_chart")
    st.markdown("**Metrics**")
    rows = [(split, charts.METRIC_NAMES.get(name, name), value)
            for split, values in info.metrics.items() if isinstance(values, dict)
            for name, value in values.items()]
    if rows:
        st.dataframe(pd.DataFrame(rows, columns=["split", "metric", "value"]), hide_index=True,
                     key="ckpt_metrics_table", column_config={"value": st.column_config.NumberColumn(format="%.4f")})
    else:
        st.caption("No metrics are recorded in this checkpoint.")


# ----------------------------------------------------------------------------- training
def _history(ckpt) -> list[dict]:
    """The run's validation records (empty when missing or not in the trainer's format)."""
    history = ckpt.info.extra.get("history")
    if not isinstance(history, list):
        return []
    return [r for r in history if isinstance(r, dict) and isinstance(r.get("step"), int)
            and isinstance(r.get("loss"), (int, float)) and isinstance(r.get("validation"), dict)]


def _training(entry: catalog.Entry, ckpt) -> None:
    extra = ckpt.info.extra
    history = _history(ckpt)
    best_step = extra.get("best_step") if isinstance(extra.get("best_step"), int) else None
    if history:
        scale = ui.font_scale()
        left, right = st.columns(2)
        with left:
            steps = [int(r["step"]) for r in history]
            chart = charts.loss_chart(steps, [float(r["loss"]) for r in history], font_scale=scale,
                                      title="Training loss (at each validation)")
            _show(chart, f"{entry.name}-loss", "ckpt_loss_chart")
        with right:
            frame = charts.history_frame(history)
            chart = charts.validation_chart(frame, best_step=best_step, font_scale=scale)
            _show(chart, f"{entry.name}-validation", "ckpt_validation_chart",
                  {"step": frame["step"].to_numpy(), "value": frame["value"].to_numpy()}, frame)
        if best_step:
            st.caption(f"The checkpoint holds the best validated model, from step {best_step:,}.")
    else:
        st.info("This checkpoint has no training history: it was not trained by Attnscope, "
                "or its run ended before the first validation.")
    train = extra.get("train") if isinstance(extra.get("train"), dict) else {}
    if isinstance(train.get("command"), str):
        st.markdown("**The command that trained it**")
        st.code(train["command"], language="bash", wrap_lines=True)
        with st.expander("Every training setting"):
            st.dataframe(pd.DataFrame({"training setting": [k for k in train if k != "command"],
                                       "value": [str(v) for k, v in train.items() if k != "command"]}),
                         hide_index=True, key="ckpt_train_table")
    else:
        st.caption("No training command is recorded in this checkpoint.")


# ----------------------------------------------------------------------------- timeline
def _snapshot_steps(ckpt) -> list[int]:
    """Snapshot steps whose maps are really in the file (none when the index is missing or malformed)."""
    index = ckpt.info.extra.get("snapshots")
    steps = index.get("steps") if isinstance(index, dict) else None
    if not isinstance(steps, list):
        return []
    stored = {key.split("/")[1] for key in ckpt.extra_tensors if key.startswith("snapshot/")}
    return [s for s in steps if isinstance(s, int) and str(s) in stored]


def _validation_at(history: list[dict], step: int) -> str:
    record = next((r for r in history if r.get("step") == step), None)
    if not record:
        return ""
    return ", ".join(f"{charts.METRIC_NAMES.get(k, k)} {v:.3f}" for k, v in record.get("validation", {}).items())


def _toggle_play(steps: list[int]) -> None:
    playing = not st.session_state.get("_tl_playing", False)
    st.session_state["_tl_playing"] = playing
    st.session_state["_tl_hold"] = playing  # show the current snapshot first, then advance on each tick
    if playing and st.session_state.get("tl_step") == steps[-1]:
        st.session_state["tl_step"] = steps[0]  # replay from random initialisation


def _timeline(entry: catalog.Entry, ckpt, steps: list[int]) -> None:
    index = ckpt.info.extra.get("snapshots") or {}
    history = _history(ckpt)
    if st.session_state.get("tl_step") not in steps:
        st.session_state["tl_step"] = steps[0]
    st.markdown("The task's probe input, recorded every few steps while the model trained: watch the "
                "attention pattern appear out of the random start.")
    probe = (index.get("probe") or {}).get("source")
    if probe:
        ui.show_user_text(probe, label="Probe input:")
    playing = bool(st.session_state.get("_tl_playing"))

    @st.fragment(run_every=PLAY_S if playing else None)
    def player() -> None:
        now_playing = bool(st.session_state.get("_tl_playing"))
        button, slider = st.columns([1, 7], vertical_alignment="bottom")
        with button:
            if st.button("Pause" if now_playing else "Play", key="tl_play", on_click=_toggle_play, args=(steps,),
                         icon=":material/pause:" if now_playing else ":material/play_arrow:",
                         help="Advance through the snapshots automatically."):
                st.rerun()  # the whole page: the fragment starts (or stops) ticking
        if st.session_state.get("_tl_playing") and not st.session_state.pop("_tl_hold", False):
            position = steps.index(st.session_state["tl_step"])
            if position + 1 >= len(steps):
                st.session_state["_tl_playing"] = False
                st.rerun()
            st.session_state["tl_step"] = steps[position + 1]
        with slider:
            step = st.select_slider("Training step", options=steps, key="tl_step",
                                    help="Step 0 is the random initialisation; the last is the final model.")
        maps = snapshot_maps(ckpt.extra_tensors, step)
        kinds = [k for k in index.get("kinds", maps) if k in maps] or list(maps)
        a, b, c = st.columns(3)
        with a:
            kind = _choose_kind(kinds, "tl_kind")
        with b:
            layer = _pick("Layer", maps[kind].shape[0], "tl_layer")
        with c:
            head = _pick("Head", maps[kind].shape[1], "tl_head")
        matrix = maps[kind][layer, head]
        rows, cols = _axes(kind, matrix, index.get("source_tokens"), index.get("target_tokens"))
        title = f"{KIND_LABELS.get(kind, kind)} · layer {layer + 1}, head {head + 1} · step {step:,}"
        chart = charts.attention_map(matrix, rows, cols, title=title, font_scale=ui.font_scale())
        st.altair_chart(chart, width="content")
        scores = _validation_at(history, step)
        st.caption(f"Snapshot {steps.index(step) + 1} of {len(steps)}"
                   + (f" · validation here: {scores}" if scores else ""))

    player()


# ----------------------------------------------------------------------------- side by side
def _other_default(entry: catalog.Entry, entries: list[catalog.Entry]) -> str:
    same_task = [e.key for e in entries if e.task == entry.task and e.key != entry.key]
    return same_task[0] if same_task else entry.key


def _default_text(entry: catalog.Entry) -> str:
    task = TASKS.get(entry.task) if isinstance(entry.task, str) else None
    if task is None:
        return "hello world"
    return task.probe or (task.examples[0] if task.examples else "hello world")


def _three_maps(first: np.ndarray, second: np.ndarray, rows: list[str], cols: list[str], titles: tuple[str, str],
                name: str, comparable: bool, rows_b: list[str] | None = None, cols_b: list[str] | None = None) -> None:
    """Left map, right map and (when they share their tokens) right − left, in one row."""
    scale = ui.font_scale()
    size = dict(font_scale=scale, size=240, legend_below=True)
    a, b, c = st.columns(3)
    with a:
        st.altair_chart(charts.attention_map(first, rows, cols, title=titles[0], **size), width="content")
    with b:
        st.altair_chart(charts.attention_map(second, rows_b or rows, cols_b or cols, title=titles[1], **size),
                        width="content")
    with c:
        if comparable:
            chart = charts.difference_map(first, second, rows, cols, title="Difference (right − left)", **size)
            st.altair_chart(chart, width="content")
            diff = np.asarray(second, float) - np.asarray(first, float)
            ui.export_data({"first": first, "second": second, "difference": diff},
                           matrix_frame(diff, rows, cols, value="difference"), name, key="sbs_data")
            st.caption("Orange: more attention on the right; blue: more on the left; white: no change.")
        else:
            st.info("The two models read or produced different tokens, so there is no cell-by-cell "
                    "difference to draw. Compare the two maps by eye.")


def _compare_snapshots(entry: catalog.Entry, ckpt, steps: list[int]) -> None:
    index = ckpt.info.extra.get("snapshots") or {}
    for key, default in (("sbs_step_a", steps[0]), ("sbs_step_b", steps[-1])):
        if st.session_state.get(key) not in steps:
            st.session_state[key] = default
    a, b = st.columns(2)
    with a:
        step_a = st.select_slider("Left: step", options=steps, key="sbs_step_a")
    with b:
        step_b = st.select_slider("Right: step", options=steps, key="sbs_step_b")
    maps_a, maps_b = snapshot_maps(ckpt.extra_tensors, step_a), snapshot_maps(ckpt.extra_tensors, step_b)
    kinds = [k for k in maps_a if k in maps_b]
    kind, layer, head = _view_controls(kinds, maps_a[kinds[-1]].shape[:2] if kinds else (1, 1))
    first, second = maps_a[kind][layer, head], maps_b[kind][layer, head]
    rows, cols = _axes(kind, first, index.get("source_tokens"), index.get("target_tokens"))
    label = f"{KIND_LABELS.get(kind, kind)} · L{layer + 1} H{head + 1}"
    _three_maps(first, second, rows, cols, (f"Step {step_a:,} · {label}", f"Step {step_b:,} · {label}"),
                f"{entry.name}-steps-{step_a}-{step_b}", comparable=True)


def _view_controls(kinds: list[str], shape: tuple[int, int]) -> tuple[str, int, int]:
    a, b, c = st.columns(3)
    with a:
        kind = _choose_kind(kinds, "sbs_kind")
    with b:
        layer = _pick("Layer", shape[0], "sbs_layer")
    with c:
        head = _pick("Head", shape[1], "sbs_head")
    return kind, layer, head


def _compare_checkpoints(entry: catalog.Entry) -> None:
    entries = resources.entries()[0]
    keys = [e.key for e in entries]
    labels = {e.key: e.label for e in entries}
    if st.session_state.get("sbs_other") not in keys:
        st.session_state["sbs_other"] = _other_default(entry, entries)
    if st.session_state.get("_sbs_text_for") != entry.key or "sbs_text" not in st.session_state:
        st.session_state["_sbs_text_for"] = entry.key
        st.session_state["sbs_text"] = _default_text(entry)
    other_key = st.selectbox("Compare with", keys, key="sbs_other", format_func=labels.get)
    text = st.text_area("Input for both models", key="sbs_text", height=80, max_chars=2000)
    other = resources.entry(other_key)
    if other is None:
        return
    if not text.strip():
        st.info("Type an input for the two models to read.")
        return
    first = ui.attempt(f"run {entry.name} on this input", resources.explain_entry, entry, text)
    second = ui.attempt(f"run {other.name} on this input", resources.explain_entry, other, text)
    if first is None or second is None:
        return
    kinds = [k for k in first.attention if k in second.attention]
    if not kinds:
        st.info("These two models have no attention kind in common (for example a classifier and a "
                "language model), so their maps cannot be compared.")
        return
    shape = tuple(min(x, y) for x, y in zip(first.attention[kinds[-1]].shape[:2],
                                            second.attention[kinds[-1]].shape[:2]))
    kind, layer, head = _view_controls(kinds, shape)
    layer = min(layer, first.attention[kind].shape[0] - 1, second.attention[kind].shape[0] - 1)
    head = min(head, first.attention[kind].shape[1] - 1, second.attention[kind].shape[1] - 1)
    map_a, map_b = first.attention[kind][layer, head], second.attention[kind][layer, head]
    rows_a, cols_a = _axes(kind, map_a, first.source_tokens, first.target_tokens)
    rows_b, cols_b = _axes(kind, map_b, second.source_tokens, second.target_tokens)
    comparable = map_a.shape == map_b.shape and rows_a == rows_b and cols_a == cols_b
    label = f"{KIND_LABELS.get(kind, kind)} · L{layer + 1} H{head + 1}"
    _three_maps(map_a, map_b, rows_a, cols_a, (f"{entry.name} · {label}", f"{other.name} · {label}"),
                f"{entry.name}-vs-{other.name}", comparable, rows_b, cols_b)
    a, b = st.columns(2)
    with a:
        ui.show_user_text(first.prediction.text, label=f"{entry.name} predicts:")
    with b:
        ui.show_user_text(second.prediction.text, label=f"{other.name} predicts:")


def _side_by_side(entry: catalog.Entry, ckpt, steps: list[int]) -> None:
    modes = {"snapshots": "Two moments of this model's training", "checkpoints": "Two checkpoints"}
    if not steps:
        modes.pop("snapshots")
    if st.session_state.get("sbs_mode") not in modes:
        st.session_state["sbs_mode"] = next(iter(modes))
    mode = st.radio("Compare", list(modes), key="sbs_mode", format_func=modes.get, horizontal=True)
    if mode == "snapshots":
        _compare_snapshots(entry, ckpt, steps)
    else:
        _compare_checkpoints(entry)


# ----------------------------------------------------------------------------- file
def _ask_delete(key: str) -> None:
    st.session_state["_ckpt_confirm"] = key


def _cancel_delete() -> None:
    st.session_state.pop("_ckpt_confirm", None)


def _delete(key: str) -> None:
    st.session_state.pop("_ckpt_confirm", None)
    entry = resources.entry(key)
    if entry is None:
        return
    try:
        catalog.delete(entry)
    except (OSError, ValueError) as error:
        st.session_state["_ckpt_flash"] = ("error", f"Could not delete {_code(entry.name)}: {error}")
        return
    resources.entries.clear()
    st.session_state["_ckpt_flash"] = ("success", f"Deleted {_code(entry.name)}.")
    st.session_state.pop("ckpt", None)  # the sidebar falls back to the default checkpoint


def _file(entry: catalog.Entry, ckpt) -> None:
    size = entry.path.stat().st_size
    st.markdown(f"**File:** {_code(entry.path.name)} · {size / 1024 / 1024:.2f} MB")
    st.caption(f"SHA-256 (verified when loaded): {ckpt.info.sha256}")
    data = entry.path.read_bytes() if size <= INLINE_DOWNLOAD_BYTES else entry.path.read_bytes
    st.download_button("Download checkpoint", data, file_name=f"{entry.name}.safetensors",
                       mime="application/octet-stream", key="ckpt_download", icon=":material/download:",
                       on_click="ignore")
    if not entry.deletable:
        st.caption("Shipped checkpoints are part of Attnscope and cannot be deleted.")
        return
    if registry().is_training(entry.path):
        st.caption("This run is still training; stop it on the Train page before deleting it.")
        return
    if st.session_state.get("_ckpt_confirm") == entry.key:
        st.warning(f"Delete {_code(entry.name)} for good? This cannot be undone.", icon=":material/warning:")
        a, b = st.columns(2)
        a.button("Yes, delete it", key="ckpt_delete_confirm", type="primary", on_click=_delete, args=(entry.key,))
        b.button("Cancel", key="ckpt_delete_cancel", on_click=_cancel_delete)
    else:
        st.button("Delete…", key="ckpt_delete", icon=":material/delete:", on_click=_ask_delete, args=(entry.key,))


# ----------------------------------------------------------------------------- page
ui.restore_from_url(URL_KEYS)
st.title("Checkpoints")
flash = st.session_state.pop("_ckpt_flash", None)
if flash:
    getattr(st, flash[0])(flash[1])
loaded = ui.current_checkpoint()
if loaded is None:
    st.info("Choose a checkpoint in the sidebar, train one on the Train page, or upload one.")
    st.stop()
entry, ckpt = loaded
source = {"shipped": "Shipped with Attnscope", "run": "Your training run", "upload": "Uploaded"}[entry.source]
st.markdown(f"### {_code(entry.name)}")
known = TASKS.get(entry.task) if isinstance(entry.task, str) else None
st.caption(f"{source} · {ckpt.config.architecture}" + (f" · {known.description}" if known else ""))

steps = _snapshot_steps(ckpt)
overview, training, timeline, side, file_tab = st.tabs(
    ["Overview", "Training", "Attention timeline", "Side by side", "File"])
# Each tab stands alone: a malformed record in an uploaded file spoils one tab, not the page.
with overview:
    ui.attempt("describe this checkpoint", _overview, entry, ckpt)
with training:
    ui.attempt("show how this checkpoint was trained", _training, entry, ckpt)
with timeline:
    if steps:
        ui.attempt("replay the attention snapshots", _timeline, entry, ckpt, steps)
    else:
        st.info("This checkpoint has no attention snapshots (it was not trained by Attnscope), "
                "so there is no timeline to replay. Train a model on the Train page to get one.")
with side:
    ui.attempt("compare attention maps", _side_by_side, entry, ckpt, steps)
with file_tab:
    ui.attempt("offer the file", _file, entry, ckpt)

ui.write_to_url([k for k in URL_KEYS if steps])
