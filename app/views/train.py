"""Train: pick a task and a model size, see the paper's two training ideas, train live, then explore.

Training runs in a background thread owned by the process-wide job registry; this page
only starts, watches (a fragment polls about once a second) and stops jobs, so a
refresh never loses a run.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.ui import presentation, widgets
from app import resources
from app.services.jobs import IDLE_S, JobRefused, default_name, training_threads
from app.views.parts.train import runs, settings, teaching
from core import device, TASKS, training


def _start(resume: bool = False) -> None:
    """Train (or Continue, ``resume``) button callback: start the job, then offer a fresh name for the next run."""
    state = st.session_state
    try:
        name, config = settings.config()
        if Path(config.out).exists() and not resume:
            raise ValueError(f"a run called {name!r} already exists; choose another name "
                             "(or delete the old run on the Checkpoints page)")
        resources.registry().start(name, config, resume=resume, run_on=bool(state.get("train_run_on")))
    except (ValueError, JobRefused) as error:
        state["_train_message"] = f"Could not start training: {error}"
        return
    state["_train_message"] = None
    state["train_name"] = state["_train_auto_name"] = default_name(state["train_task"])


# ----------------------------------------------------------------------------- page
widgets.restore_from_url(settings.URL_KEYS)
settings.init_state()

st.title("Train a Transformer")
presentation.folded().caption("Pick a task and a model size, look at how the paper trains, then train and watch "
                              "attention form. Short runs belong here; long ones to the command line (below).")

def _ideas() -> None:
    """The paper's two training ideas, drawn for the chosen settings (read from the session)."""
    sizes = settings.sizes()
    with st.expander("**Before training: two ideas from the paper**", expanded=not resources.registry().jobs(),
                     icon=":material/school:"):
        teaching.teaching_plots(max(1, sizes["d_model"]), int(st.session_state["train_warmup"]),
                                int(st.session_state["train_steps"]), float(st.session_state["train_smoothing"]),
                                TASKS[st.session_state["train_task"]].architecture == "encoder")


if presentation.enabled():  # on a projector the first chart comes first; the settings follow it
    _ideas()
settings.widgets()
try:
    name, config = settings.config()
except ValueError as error:
    name = config = None
    st.error(f"Check the settings: {error}")

busy = resources.registry().running()
sizes = settings.sizes()
if not presentation.enabled():
    _ideas()

st.subheader("Train")
if config is not None:
    eval_every, snapshot_every = settings.schedule(config.steps)
    arch = TASKS[config.task].architecture
    st.caption(f"{arch} model · {sizes['n_layers']} layer(s) per stack, d_model {sizes['d_model']}, "
               f"{sizes['n_heads']} heads of width {sizes['d_model'] // sizes['n_heads']}, d_ff {sizes['d_ff']} · "
               f"validation every {min(eval_every, config.steps)} steps, attention snapshot every "
               f"{snapshot_every} · saved as runs/{Path(config.out).name} · {training_threads()} CPU thread(s) "
               "for training, so the app stays responsive.")
    if config.device == "cpu" and config.preset in ("medium", "base") and config.steps > 200:
        st.caption(":material/info: This model is large for a CPU: expect minutes per hundred steps. "
                   "The command line with a GPU suits it better.")
    if Path(config.out).exists():
        st.warning(f"A run called {name!r} already exists; choose another name to train again"
                   + (", or continue it." if training.resume_state_path(config.out).exists() else "."))
if busy:
    st.info(f"{', '.join(j.name for j in busy)} is training. This machine trains one model at a time: "
            "wait for it to finish or stop it.", icon=":material/hourglass_top:")
st.checkbox("Keep training when nobody is watching", key="train_run_on",
            help=f"Without it, a run stops (validated and saved) after {IDLE_S / 60:.0f} minutes with no Train "
                 "page open on it, so a closed tab does not keep the machine busy.")
st.button("Train", key="train_start", type="primary", icon=":material/play_arrow:", on_click=_start,
          disabled=config is None or bool(busy) or Path(config.out).exists())
if config is not None and Path(config.out).exists() and training.resume_state_path(config.out).exists():
    st.button("Continue this run", key="train_resume", icon=":material/resume:", on_click=_start, args=(True,),
              disabled=bool(busy), help="Go on from its last saved state (a run stopped, finished, or cut off by a "
                                        "server restart) up to the steps set above; its other settings must match.")
if st.session_state.get("_train_message"):
    st.error(st.session_state.pop("_train_message"))

runs.jobs()

if config is not None:
    with st.expander("Long runs: the same training on the command line", icon=":material/terminal:"):
        command = settings.cli_command(config)
        st.caption("Run from the repository root. The checkpoint lands in runs/ and appears in the picker. "
                   "Add --resume to continue a run that was interrupted.")
        st.code(command, language="bash", wrap_lines=True)
        gpus = max(2, device.gpu_count())
        st.caption("Several GPUs on one machine (DistributedDataParallel): set --nproc_per_node to their number.")
        st.code(runs.torchrun_command(command, gpus), language="bash", wrap_lines=True)

widgets.write_to_url(list(settings.URL_KEYS))
