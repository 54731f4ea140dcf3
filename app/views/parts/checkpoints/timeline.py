"""The Checkpoints page's attention tabs: the timeline (the probe's attention replayed across
training) and side by side (two moments of one run, or two checkpoints on the same input)."""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app.services import catalog
from app.ui import compare, presentation, widgets
from app import resources
from app.charts.attention import token_labels
from app.charts.research import cell_grid
from app.charts.training import METRIC_NAMES
from core import head_types, KIND_LABELS, TASKS, training

PLAY_S = 0.8  # seconds per frame of the timeline


# ----------------------------------------------------------------------------- timeline
def _toggle_play(steps: list[int]) -> None:
    playing = not st.session_state.get("_tl_playing", False)
    st.session_state["_tl_playing"] = playing
    st.session_state["_tl_hold"] = playing  # show the current snapshot first, then advance on each tick
    if playing and st.session_state.get("tl_step") == steps[-1]:
        st.session_state["tl_step"] = steps[0]  # replay from random initialisation


def _play_button(steps: list[int]) -> None:
    """Play / Pause, and (while playing) the step after the one shown last."""
    playing = bool(st.session_state.get("_tl_playing"))
    if st.button("Pause" if playing else "Play", key="tl_play", on_click=_toggle_play, args=(steps,),
                 icon=":material/pause:" if playing else ":material/play_arrow:",
                 help="Advance through the snapshots automatically."):
        st.rerun()  # the whole page: the fragment starts (or stops) ticking
    if st.session_state.get("_tl_playing") and not st.session_state.pop("_tl_hold", False):
        position = steps.index(st.session_state["tl_step"])
        if position + 1 >= len(steps):
            st.session_state["_tl_playing"] = False
            st.rerun()
        st.session_state["tl_step"] = steps[position + 1]


def timeline(tl: training.SnapshotTimeline) -> None:
    """Replay the probe's attention snapshot by snapshot."""
    steps = tl.steps
    widgets.choose("tl_step", steps)
    st.markdown("The task's probe input, recorded every few steps while the model trained: watch the "
                "attention pattern appear out of the random start.")
    if tl.probe_source:
        widgets.show_user_text(tl.probe_source, label="Probe input:")

    @st.fragment(run_every=PLAY_S if st.session_state.get("_tl_playing") else None)
    def player() -> None:
        button, slider = st.columns([1, 7], vertical_alignment="bottom")
        with button:
            _play_button(steps)
        with slider:
            step = st.select_slider("Training step", options=steps, key="tl_step",
                                    help="Step 0 is the random initialisation; the last is the final model.")
        widgets.snapshot_map(tl, step, "tl")
        metrics = tl.metrics_at(step) or {}
        scores = ", ".join(f"{METRIC_NAMES.get(k, k)} {v:.3f}" for k, v in metrics.items())
        st.caption(f"Snapshot {steps.index(step) + 1} of {len(steps)}"
                   + (f" · validation here: {scores}" if scores else ""))
        _distance_from_final(tl, step)

    player()


def _distance_from_final(tl: training.SnapshotTimeline, step: int) -> None:
    """Every head's Jensen–Shannon divergence (bits, mean over rows) between its map at ``step`` and the final
    model's, as a layers × heads grid of the kind the map above shows: which heads have settled."""
    kind = st.session_state.get("tl_kind")
    kind = kind if kind in tl.kinds else tl.kinds[-1]
    final = tl.steps[-1]
    distance = head_types.map_divergence(tl.maps(step, kind), tl.maps(final, kind))  # (L, H)
    layers, heads = distance.shape
    widgets.plot(cell_grid(distance, [f"layer {l + 1}" for l in range(layers)],
                           [f"head {h + 1}" for h in range(heads)], font_scale=widgets.font_scale(),
                           title=f"{KIND_LABELS.get(kind, kind)}: each head's distance from the final model",
                           value="JS bits", zrange=(0.0, 1.0)),
                 name=f"tl-{kind}-distance-step{step}", key="tl_distance")
    st.caption(f"Each cell is the Jensen–Shannon divergence (in bits, 0 = the same map, 1 = no overlap), "
               f"averaged over the probe's rows, between that head's map at step {step:,} and at the final step "
               f"{final:,}. A head whose cell goes dark has found its final pattern.")


# ----------------------------------------------------------------------------- side by side
def _default_text(entry: catalog.Entry) -> str:
    task = TASKS.get(entry.task) if isinstance(entry.task, str) else None
    if task is None:
        return "hello world"
    return task.probe or (task.examples[0] if task.examples else "hello world")


def _compare_snapshots(entry: catalog.Entry, tl: training.SnapshotTimeline, box: DeltaGenerator) -> None:
    steps = tl.steps
    widgets.choose("sbs_step_a", steps, steps[0])
    widgets.choose("sbs_step_b", steps, steps[-1])
    a, b = st.columns(2)
    with a:
        step_a = st.select_slider("Left: step", options=steps, key="sbs_step_a")
    with b:
        step_b = st.select_slider("Right: step", options=steps, key="sbs_step_b")
    with presentation.folded("Which head", ":material/tune:"):  # presentation mode: all on the first screen
        kind, layer, head = widgets.map_controls({k: tl.maps(step_a, k).shape[:2] for k in tl.kinds}, "sbs")
    first, second = tl.maps(step_a, kind)[layer, head], tl.maps(step_b, kind)[layer, head]
    label = f"{KIND_LABELS.get(kind, kind)} · L{layer + 1} H{head + 1}"
    queries, keys = tl.axes(kind)
    axes = (token_labels(queries), token_labels(keys))
    st.caption(f"{label}: step {step_a:,} (left) and step {step_b:,} (right).")
    with box:
        compare.draw(first, second, axes, axes, titles=(f"Step {step_a:,}", f"Step {step_b:,}"),
                     difference_title="Difference (right − left)", name=f"{entry.name}-steps-{step_a}-{step_b}")


def _compare_checkpoints(entry: catalog.Entry, box: DeltaGenerator) -> None:
    same_task = [e.key for e in resources.entries()[0] if e.task == entry.task and e.key != entry.key]
    other = compare.other_checkpoint("sbs_other", "Compare with", same_task[0] if same_task else entry.key)
    if st.session_state.get("_sbs_text_for") != entry.key or "sbs_text" not in st.session_state:
        st.session_state["_sbs_text_for"] = entry.key
        st.session_state["sbs_text"] = _default_text(entry)
    text = st.text_area("Input for both models", key="sbs_text", height=80, max_chars=2000)
    if other is None:
        return
    if not text.strip():
        st.info("Type an input for the two models to read.")
        return
    first = widgets.attempt(f"run {entry.name} on this input", resources.explain_entry, entry, text)
    second = widgets.attempt(f"run {other.name} on this input", resources.explain_entry, other, text)
    if first is None or second is None:
        return
    kinds = [k for k in first.kinds if k in second.kinds]
    if not kinds:
        st.info("These two models have no attention kind in common (for example a classifier and a "
                "language model), so their maps cannot be compared.")
        return
    shapes = {k: tuple(min(x, y) for x, y in zip(first.shape(k), second.shape(k))) for k in kinds}
    with presentation.folded("Which head", ":material/tune:"):  # presentation mode: all on the first screen
        kind, layer, head = widgets.map_controls(shapes, "sbs")
    label = f"{KIND_LABELS.get(kind, kind)} · L{layer + 1} H{head + 1}"
    st.caption(f"{label}: {widgets.plain(entry.name)} (left) and {widgets.plain(other.name)} (right).")
    with box:
        compare.explanations(first, second, kind, layer, head, titles=(entry.name, other.name),
                             difference_title="Difference (right − left)", name=f"{entry.name}-vs-{other.name}")


def side_by_side(entry: catalog.Entry, tl: training.SnapshotTimeline) -> None:
    """Two moments of this run's training, or two checkpoints, on the same head: the controls, then the maps (in
    presentation mode the maps on the left and the controls beside them, both on the first screen)."""
    controls, box = presentation.beside()
    with controls:
        _side_by_side(entry, tl, box)


def _side_by_side(entry: catalog.Entry, tl: training.SnapshotTimeline, box: DeltaGenerator) -> None:
    modes = {"snapshots": "Two moments of this model's training", "checkpoints": "Two checkpoints"}
    if not tl.steps:
        modes.pop("snapshots")
    widgets.choose("sbs_mode", list(modes))
    mode = st.radio("Compare", list(modes), key="sbs_mode", format_func=modes.get, horizontal=True)
    if mode == "snapshots":
        _compare_snapshots(entry, tl, box)
    else:
        _compare_checkpoints(entry, box)
