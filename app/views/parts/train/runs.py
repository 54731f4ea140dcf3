"""The Train page's runs: progress, loss and validation curves, the live attention map, and the
controls to stop, explore or forget a run. A fragment polls a running job about once a second.
"""

from __future__ import annotations

import re

import streamlit as st

from app import resources, routes
from app.ui import widgets
from app.charts import training as charts
from app.services.jobs import FAILED, FINISHED, IDLE_S, RUNNING, STOPPED, JobView
from app.views.parts.train.settings import schedule

POLL_S = 1.0
STATUS = {RUNNING: ":material/progress_activity: training", FINISHED: ":material/check_circle: finished",
          STOPPED: ":material/stop_circle: stopped", FAILED: ":material/error: failed"}


def torchrun_command(command: str, gpus: int) -> str:
    """The single-process command as a ``torchrun`` one for ``gpus`` GPUs: its ``--device`` is dropped
    (a command generated on a CPU machine says ``--device=cpu``; each torchrun process takes its own GPU)."""
    command = re.sub(r"\s--device(=|\s+)\S+", "", command)
    return command.replace("python -m core train", f"torchrun --nproc_per_node={gpus} -m core train", 1)


def _live_map(view: JobView, suffix: str) -> None:
    """The probe input's attention as the model learns (the latest snapshot)."""
    tl = view.timeline()
    if tl is None:
        st.caption("The first attention snapshot is being taken…")
        return
    widgets.snapshot_map(tl, tl.steps[-1], f"train{suffix}")
    widgets.show_user_text(tl.probe_source, label="Probe input (the same sentence at every snapshot):")
    if view.source_tokens is None:
        st.caption("Token labels appear after the first validation, when the first checkpoint is written.")


def _planned(view: JobView) -> tuple[list[int], list[float]]:
    """The whole learning-rate schedule of this run, step by step."""
    recipe = view.config.recipe(view.config.architecture()["d_model"], None)
    steps = list(range(1, view.total_steps + 1))
    return steps, [recipe.lr_at(s) for s in steps]


def _curves(view: JobView) -> None:
    scale = widgets.font_scale()
    loss, rate, right = st.columns(3)
    with loss:
        if view.steps:
            st.altair_chart(charts.fit_column(charts.loss_chart(view.steps, view.losses, font_scale=scale)),
                            width="stretch")
        else:
            st.caption("The loss appears after the first step.")
    with rate:
        if view.steps:
            st.altair_chart(charts.fit_column(charts.live_lr_chart(view.steps, view.lrs, _planned(view),
                                                                   font_scale=scale)), width="stretch")
        else:
            st.caption("The learning rate appears after the first step.")
    with right:
        frame = charts.history_frame(view.evaluations)
        if not frame.empty:
            st.altair_chart(charts.fit_column(charts.validation_chart(frame, font_scale=scale)), width="stretch")
        else:
            every, _ = schedule(view.total_steps)
            st.caption(f"Validation runs every {min(every, view.total_steps)} steps; its scores appear here.")


def _job_panel(view: JobView, suffix: str) -> None:
    """Everything about one job: progress, numbers, curves, the live map, and its controls."""
    # Run names are sanitised to [A-Za-z0-9_-]; in backticks they are shown literally.
    st.markdown(f"**Run** `{view.name}` · {STATUS[view.status]} · task {view.config.task}, "
                f"{view.config.preset} preset, {view.config.steps:,} steps")
    if view.status == RUNNING:
        text = ("Stopping: validating and saving the checkpoint…" if view.stop_requested or view.stopped_idle
                else f"Step {view.step:,} of {view.total_steps:,}")
        st.progress(view.progress, text=text)
        st.caption("Keeps training with nobody watching." if view.run_on else
                   f"Stops after {IDLE_S / 60:.0f} minutes with no Train page open on it (any session's counts).")
    elif view.status == FAILED:
        st.error(f"Training failed: {view.error}")
    elif view.status == STOPPED and view.stopped_idle:
        st.info(f"Stopped at step {view.step:,} because nobody watched it for {IDLE_S / 60:.0f} minutes; "
                "the best validated model so far was saved. Tick *Keep training when nobody is watching* "
                "to let a run go on with the page closed.")
    elif view.status == STOPPED:
        st.info(f"Stopped at step {view.step:,}; the best validated model so far was saved.")
    else:
        st.success(f"Finished {view.step:,} steps in {view.elapsed:,.0f} s. The saved checkpoint is the "
                   "best model seen at a validation.")
    a, b, lr, c, d = st.columns(5)
    a.metric("Step", f"{view.step:,} / {view.total_steps:,}")
    b.metric("Loss", f"{view.losses[-1]:.3f}" if view.losses else "—")
    lr.metric("Learning rate", f"{view.lrs[-1]:.2e}" if view.lrs else "—",
              help="The rate the optimizer used at the last step (the schedule is drawn below).")
    c.metric("Tokens / s", f"{view.tokens_per_s:,.0f}" if view.steps else "—")
    d.metric("Elapsed", f"{view.elapsed:,.0f} s")
    if view.status == RUNNING:
        st.button("Stop", key=f"train_stop{suffix}", icon=":material/stop:", disabled=view.stop_requested,
                  on_click=resources.registry().stop, args=(view.name,),
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
            st.switch_page(routes.EXPLORE)
    with b:
        if st.button("Timeline and details", key=f"train_details{suffix}", disabled=not usable,
                     icon=":material/inventory_2:", on_click=_choose, args=(key,)):
            st.switch_page(routes.CHECKPOINTS)
    with c:
        st.button("Remove from this list", key=f"train_forget{suffix}", on_click=resources.registry().forget,
                  args=(view.name,), help="The checkpoint stays; only this panel goes.")
    if not usable and view.status != FAILED:
        st.caption("No checkpoint of this run is available (it may have been deleted).")


def _acknowledge(views: list[JobView]) -> bool:
    """True (once per finished job and session) when a job finished since this session last looked."""
    seen = st.session_state.setdefault("_train_seen_done", set())
    fresh = [v for v in views if v.done and (v.name, v.started) not in seen]
    seen.update((v.name, v.started) for v in fresh)
    return bool(fresh)


def jobs() -> None:
    """Every training job of this server: the running one live, finished ones with their controls."""
    all_jobs = resources.registry().jobs()
    if not all_jobs:
        st.caption("No training runs yet in this server session. Finished runs stay in the checkpoint picker.")
        return
    views = [j.view() for j in all_jobs]
    if _acknowledge(views):  # a run finished: let the sidebar list its checkpoint
        resources.entries.clear()
        st.rerun()
    running = any(v.status == RUNNING for v in views)

    @st.fragment(run_every=POLL_S if running else None)
    def live(name: str, suffix: str) -> None:
        job = resources.registry().get(name)
        if job is None:
            return
        job.watch()  # a page shows it: it keeps training
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
