"""The Checkpoints page's first two tabs: what a model is (task, configuration, parameters, metrics)
and how it was trained (loss and validation curves, the command)."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from app.services import catalog
from app.ui import export, tables, widgets
from app.charts import training as charts
from app.charts.architecture import parameter_chart
from core import Checkpoint, lessons, ModelFacts, TASKS, training


def _task_line(info) -> None:
    task = TASKS.get(info.task) if isinstance(info.task, str) else None
    if task is not None:
        st.markdown(f"**Task:** {widgets.code(task.name)} — {task.description}")
    elif info.task:
        st.markdown(f"**Task:** {widgets.code(str(info.task))} (not a built-in task)")
    else:
        st.markdown("**Task:** none recorded")
    if info.run.labels:
        st.caption("Classes: " + ", ".join(widgets.code(label) for label in info.run.labels))


def _parameter_chart(entry: catalog.Entry, table: pd.DataFrame) -> None:
    chart = parameter_chart(table, font_scale=widgets.font_scale())
    st.altair_chart(charts.fit_column(chart), width="stretch")
    export.export_chart(chart, f"{entry.name}-parameters", "ckpt_param_chart")


def overview(entry: catalog.Entry, ckpt: Checkpoint | ModelFacts) -> None:
    """Task, configuration, parameters per block and the recorded metrics. In presentation mode the
    parameter bars come first, beside the task, so the chart is on the first screen (the tables follow)."""
    info = ckpt.info
    counts = widgets.parameter_counts(ckpt)
    table = tables.parameter_frame(lessons.parameter_table(counts, ckpt.config))
    presenting = bool(st.session_state.get("projector"))
    if presenting:
        chart_side, task_side = st.columns([3, 2], gap="large")
        with task_side:
            _task_line(info)
        with task_side:
            st.metric("Parameters", f"{sum(counts.values()):,}")
        with chart_side:
            _parameter_chart(entry, table)
    else:
        _task_line(info)
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Configuration**")
        config = pd.DataFrame({"setting": list(asdict(info.config)),
                               "value": [str(v) for v in asdict(info.config).values()]})
        st.dataframe(config, hide_index=True, key="ckpt_config_table", height="content")
    with right:
        if not presenting:
            st.metric("Parameters", f"{sum(counts.values()):,}")
        st.dataframe(table[["block", "parameters", "share"]], hide_index=True, key="ckpt_param_table", height="content",
                     column_config={"parameters": st.column_config.NumberColumn(format="localized"),
                                    "share": st.column_config.NumberColumn(format="percent")})
        if not presenting:
            _parameter_chart(entry, table)
    st.markdown("**Metrics**")
    rows = [(split, charts.METRIC_NAMES.get(name, name), value)
            for split, values in info.metrics.items() if isinstance(values, dict)
            for name, value in values.items()]
    if rows:
        st.dataframe(pd.DataFrame(rows, columns=["split", "metric", "value"]), hide_index=True,
                     key="ckpt_metrics_table", column_config={"value": st.column_config.NumberColumn(format="%.4f")})
    else:
        st.caption("No metrics are recorded in this checkpoint.")


def training_section(entry: catalog.Entry, ckpt: Checkpoint | ModelFacts) -> None:
    """The loss and validation curves of the run, and the command that trained it."""
    run = ckpt.info.run
    history = training.training_history(ckpt)
    best_step = run.best_step
    if history:
        scale = widgets.font_scale()
        left, right = st.columns(2)
        with left:
            steps = [int(r["step"]) for r in history]
            chart = charts.loss_chart(steps, [float(r["loss"]) for r in history], font_scale=scale,
                                      title="Training loss (at each validation)")
            st.altair_chart(charts.fit_column(chart), width="stretch")
            export.export_chart(chart, f"{entry.name}-loss", "ckpt_loss_chart")
        with right:
            frame = charts.history_frame(history)
            chart = charts.validation_chart(frame, best_step=best_step, font_scale=scale)
            st.altair_chart(charts.fit_column(chart), width="stretch")
            export.exports(chart, {"step": frame["step"].to_numpy(), "value": frame["value"].to_numpy()}, frame,
                           f"{entry.name}-validation", "ckpt_validation_chart")
        if best_step:
            st.caption(f"The checkpoint holds the best validated model, from step {best_step:,}.")
    else:
        st.info("This checkpoint has no training history: it was not trained by Attnscope, "
                "or its run ended before the first validation.")
    train = run.train
    if run.command is not None:
        st.markdown("**The command that trained it**")
        st.code(run.command, language="bash", wrap_lines=True)
        with st.expander("Every training setting"):
            st.dataframe(pd.DataFrame({"training setting": [k for k in train if k != "command"],
                                       "value": [str(v) for k, v in train.items() if k != "command"]}),
                         hide_index=True, key="ckpt_train_table")
    else:
        st.caption("No training command is recorded in this checkpoint.")
