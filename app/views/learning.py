"""Lesson: how it learns — one batch of the translation model's own training data through one real training step.

Stages: the batch (teacher forcing: the decoder reads the target shifted right and is scored on it shifted left),
the masks, the loss (label smoothing; cross-entropy as KL plus the targets' entropy), one Adam step at the Noam rate
of a step the student picks, the batch before and after, and the Train page with the same settings. Every number
is :func:`core.lessons.learning_step`'s: the trainer's own ``train_step`` on a copy of the sidebar's translation-like
checkpoint (else the shipped one). Each stage shows the project's code that computes it. The stage (from 1) and the
step number live in the share link; everything under the title is one fragment. Every word shown comes from the
``how-it-learns`` messages in the session's language (:mod:`app.ui.language`).
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import streamlit as st

from app import learning_resources, resources, routes
from app.charts import grids
from app.charts import training as training_charts
from app.ui import language, presentation, vega, widgets
from core import lessons, subsequent_mask, training

STAGES = ("batch", "masks", "loss", "adam", "after", "train")  # each stage's message key
CODE = {  # stage → the functions of the project that compute it
    0: (training.data.Batcher.rows,), 1: (subsequent_mask,),
    2: (training.objectives.smoothed_targets, training.smoothed_loss), 3: (training.noam_lr, training.step.train_step),
    4: (lessons.learning_step,), 5: (),
}
MAX_STEP = 20_000

widgets.restore_from_url({"learn_stage": int, "learn_step": int}, {"learn_stage": 0, "learn_step": 0, "learn_seed": 0},
                         from_one={"learn_stage": "learn_stage_n"})
show = not presentation.enabled()
fs = widgets.font_scale()
t = language.words("how-it-learns")
st.title(t("opening.title"))
if show:
    st.markdown(t("opening.intro"))


def _go(delta: int) -> None:
    st.session_state["learn_stage"] = int(np.clip(st.session_state["learn_stage"] + delta, 0, len(STAGES) - 1))


def _code(stage: int) -> None:
    """The functions that compute ``stage``, in an expander (their source, read from the installed code)."""
    for fn in CODE[stage]:
        where = inspect.getsourcefile(fn) or "?"
        name = f"{where[where.rfind('core/'):] if 'core/' in where else where} · {fn.__qualname__}"
        with st.expander(t("nav.code", name=name), icon=":material/code:"):
            st.code(inspect.getsource(fn), language="python")


@st.fragment(key="learning_body")
def learning_body() -> None:
    """The stage, its pickers and Back / Next: a fragment, so moving on reruns it alone."""
    chosen = widgets.current_entry()
    entry = learning_resources.learning_entry(chosen)
    if chosen is not None and chosen.key != entry.key and show:
        st.caption(t("opening.instead", chosen=chosen.name, entry=entry.name))
    trained = int(resources.checkpoint(entry).info.extra.get("train", {}).get("steps", 0) or 0)
    if st.session_state["learn_step"] < 1:
        st.session_state["learn_step"] = min(trained + 1, MAX_STEP)  # the step after the model's last one
    widgets.clamped("learn_step", 1, MAX_STEP)
    stage = widgets.clamped("learn_stage", 0, len(STAGES) - 1)
    got = widgets.attempt(t("nav.doing"), learning_resources.learning_step, entry,
                          int(st.session_state["learn_step"]), int(st.session_state["learn_seed"]))
    if got is None:
        return
    nav = st.columns([1, 1, 3])
    nav[0].button(t("nav.back"), on_click=_go, args=(-1,), disabled=stage == 0, key="learn_prev")
    nav[1].button(t("nav.next"), on_click=_go, args=(1,), disabled=stage == len(STAGES) - 1, key="learn_next",
                  type="primary")
    st.progress((stage + 1) / len(STAGES),
                text=t("nav.progress", n=stage + 1, total=len(STAGES), name=t(f"stages.{STAGES[stage]}")))
    (_batch, _masks, _loss, _adam, _after, _train)[stage](got, entry, trained)
    _code(stage)
    widgets.write_to_url(["learn_stage", "learn_step"], {"learn_stage": "learn_stage_n"})


def _batch(got: lessons.LearningStep, entry, trained: int) -> None:
    rows = []
    for i, (src, dec, tgt) in enumerate(zip(got.sources, got.decoder_inputs, got.targets)):
        rows += [(t("batch.reads_encoder", n=i + 1), *_cells(src, len(dec))), (t("batch.reads_decoder", n=i + 1), *dec),
                 (t("batch.predicts", n=i + 1), *tgt)]
    table = pd.DataFrame(rows, columns=[t("batch.row"), *(f"t={j + 1}" for j in range(len(got.decoder_inputs[0])))])
    st.table(table.set_index(t("batch.row")))
    st.markdown(t("batch.text"))


def _cells(tokens: tuple[str, ...], width: int) -> list[str]:
    """``tokens`` cut or padded with blanks to ``width`` cells (the encoder's row has its own length)."""
    shown = list(tokens[:width]) + [""] * max(0, width - len(tokens))
    if len(tokens) > width:
        shown[-1] = "…"
    return shown


def _masks(got: lessons.LearningStep, entry, trained: int) -> None:
    short = int(np.argmax(got.padded.sum(1)))  # the row with the most padding
    labels = [f"{j + 1}:{tok}" for j, tok in enumerate(got.decoder_inputs[short])]
    both = got.causal & ~got.padded[short][None, :]  # (T, T): no future, no padding key
    left, right = st.columns(2)
    with left:
        widgets.plot(grids.mask_heatmap(got.causal, labels, labels, title=t("masks.causal"),
                                        font_scale=fs, max_width=420), name="learn-causal")
    with right:
        widgets.plot(grids.mask_heatmap(both, labels, labels, title=t("masks.padded", n=short + 1),
                                        font_scale=fs, max_width=420), name="learn-padding")
    st.markdown(t("masks.text", padded=int(got.padded.sum()), cells=got.padded.size))


def _loss(got: lessons.LearningStep, entry, trained: int) -> None:
    eps, v = got.smoothing, got.vocab
    st.latex(rf"q(\text{{{t('loss.true')}}}) = 1-\varepsilon = {got.true_share:.2f},\qquad q(\text{{{t('loss.other')}}}) = "
             rf"\frac{{\varepsilon}}{{V-2}} = \frac{{{eps:g}}}{{{v - 2}}} = {_tex_number(got.other_share)}")
    st.latex(rf"\underbrace{{-\textstyle\sum_w q(w)\log p(w)}}_{{\text{{CE}} = {got.cross_entropy:.4f}}} = "
             rf"\underbrace{{\textstyle\sum_w q(w)\log\frac{{q(w)}}{{p(w)}}}}_{{\text{{KL}}(q\,\|\,p) = {got.kl:.4f}}}"
             rf" + \underbrace{{-\textstyle\sum_w q(w)\log q(w)}}_{{H(q) = {got.target_entropy:.4f}}}")
    cols = [f"t={j + 1}" for j in range(got.true_prob_before.shape[1])]
    probs = np.where(got.padded, np.nan, got.true_prob_before)
    widgets.plot(grids.grid_heatmap(probs, title=t("loss.chart"), x_title=t("loss.position"), y_title=t("loss.row"),
                                    rows=[str(i + 1) for i in range(len(probs))],
                                    cols=cols, scheme="viridis", domain=(0.0, 1.0), value=t("loss.value"),
                                    font_scale=fs, fmt=".3f", max_height=220), name="learn-probs")
    st.markdown(t("loss.text", eps=f"{eps:g}", others=f"{v - 2:,}", entropy=f"{got.target_entropy:.4f}"))


def _tex_number(x: float) -> str:
    """``x`` in LaTeX with three significant digits: 9.88 \\times 10^{-4} (no power of ten from 0.01 to 1,000)."""
    if x == 0 or 0.01 <= abs(x) < 1000:
        return f"{x:.3g}"
    mantissa, _, exponent = f"{x:.2e}".partition("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}"


def _adam(got: lessons.LearningStep, entry, trained: int) -> None:
    st.number_input(t("adam.step", trained=f"{trained:,}"), 1, MAX_STEP, key="learn_step", help=t("adam.step_help"))
    st.latex(rf"\text{{lr}} = d^{{-0.5}}\min(\text{{step}}^{{-0.5}},\ \text{{step}}\cdot w^{{-1.5}}) = "
             rf"{got.d_model}^{{-0.5}}\min({got.step}^{{-0.5}},\ {got.step}\cdot {got.warmup}^{{-1.5}}) = "
             rf"{_tex_number(got.lr)}")
    curve = lessons.noam_curve(max(2 * got.warmup, got.step + 1, 4000), got.d_model, got.warmup)
    vega.draw(training_charts.noam_chart, curve, d_model=got.d_model, warmup=got.warmup, font_scale=fs)
    st.latex(r"\theta \leftarrow \theta - \text{lr}\cdot\frac{\hat m}{\sqrt{\hat v}+\epsilon},\quad"
             r"\hat m = \frac{m}{1-\beta_1^{t}},\ \hat v = \frac{v}{1-\beta_2^{t}}")
    changes = pd.DataFrame(got.largest_changes, columns=[t("adam.parameter"), "‖Δθ‖ / ‖θ‖"])
    st.dataframe(changes, hide_index=True, width="stretch")
    st.markdown(t("adam.text"))


def _after(got: lessons.LearningStep, entry, trained: int) -> None:
    a, b, c = st.columns(3)
    a.metric(t("after.before_metric"), f"{got.loss_before:.4f}")
    b.metric(t("after.after_metric"), f"{got.loss_after:.4f}", f"{got.loss_after - got.loss_before:+.4f}",
             delta_color="inverse")
    c.metric(t("after.step_metric"), f"{got.step_loss:.4f}")
    cols = [f"t={j + 1}" for j in range(got.true_prob_before.shape[1])]
    rows = [str(i + 1) for i in range(len(got.targets))]
    panels = [np.where(got.padded, np.nan, m) for m in (got.true_prob_before, got.true_prob_after)]
    widgets.plot(grids.side_by_side(panels, [t("after.before"), t("after.after")], x_title=t("loss.position"),
                                    y_title=t("loss.row"), value=t("loss.value"),
                                    rows=rows, cols=cols, domain=(0.0, 1.0), annotate=True, font_scale=fs,
                                    max_height=220), name="learn-before-after")
    verdict = "after.fell" if got.loss_after < got.loss_before else "after.rose"
    st.markdown(t(verdict, step=f"{got.step:,}", lr=f"{got.lr:.2e}", before=f"{got.loss_before:.4f}",
                  after=f"{got.loss_after:.4f}", warmup=got.warmup))


def _train(got: lessons.LearningStep, entry, trained: int) -> None:
    st.markdown(t("train.text", warmup=got.warmup, eps=f"{got.smoothing:g}"))
    task = getattr(entry, "task", None) or "translation"
    st.page_link(routes.TRAIN, label=t("train.link"), icon=":material/model_training:",
                 query_params={"train_task": task, "train_warmup": str(got.warmup),
                               "train_smoothing": str(got.smoothing)})


learning_body()
