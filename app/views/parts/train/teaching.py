"""The Train page's two teaching figures: the paper's warm-up schedule (with the notes' step-0 guard)
and label smoothing (targets on a log colour scale, both the sequence and the classifier case, and the
notes' KL-divergence form checked against the trainer's cross-entropy on one example)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import export, presentation, widgets
from app.charts import teaching as teaching_charts
from app.charts import training as charts
from core import lessons, training

NOAM_LATEX = (r"\mathrm{lrate} = d_{\mathrm{model}}^{-0.5}\cdot"
              r"\min\!\left(s^{-0.5},\ s\cdot\mathrm{warmup}^{-1.5}\right),\qquad s = \max(\mathrm{step},\,1)")
SEQUENCE_LATEX = (r"q(k) = \begin{cases} 1-\varepsilon & k = \text{target}\\[2pt]"
                  r"\dfrac{\varepsilon}{V-2} & k \neq \text{target},\ k \neq \text{pad}\\[2pt]"
                  r"0 & k = \text{pad (and rows whose target is pad)}\end{cases}")
CLASSIFIER_LATEX = (r"q(k) = \begin{cases} 1-\varepsilon & k = \text{target}\\[2pt]"
                    r"\dfrac{\varepsilon}{V-1} & k \neq \text{target}\end{cases}")
KL_LATEX = (r"\mathrm{KL}(q\,\|\,p) = \sum_k q_k \log\frac{q_k}{p_k} = "
            r"\underbrace{-\sum_k q_k \log p_k}_{\mathrm{CE}(q,\,p)} - \underbrace{\Big(-\sum_k q_k \log q_k\Big)}_{H(q)}")


def noam_plot(d_model: int, warmup: int, steps: int, scale: float) -> None:
    """The schedule, its formula with the step-0 guard (folded into a popover in presentation mode, so the chart
    is on the first screen), and the guard's numbers."""
    about = presentation.folded("Warm-up, then decay: the formula", ":material/function:")
    about.markdown("**Warm-up, then decay.** Adam starts with tiny steps while its statistics settle, "
                   "speeds up linearly for the warm-up, then slows down with the inverse square root of the step.")
    about.latex(NOAM_LATEX)
    about.caption(f"The guard s = max(step, 1), as in the notes' code (if step == 0: step = 1): at step 0 the formula "
                  f"would divide by zero (0^−0.5); guarded, step 0 gets step 1's rate, "
                  f"{training.noam_lr(0, d_model, warmup):.3e} = {training.noam_lr(1, d_model, warmup):.3e}.")
    curve = lessons.noam_curve(steps, d_model, warmup)
    chart = charts.noam_chart(curve, d_model=d_model, warmup=warmup, font_scale=scale)
    st.altair_chart(chart, width="content")
    a, b = st.columns(2)
    a.metric("Peak learning rate", f"{curve.peak_lr:.3e}")
    b.metric("Reached at step", f"{curve.peak_step:,}")
    if warmup > steps:
        st.caption("The warm-up is longer than the run: the rate is still rising when training ends.")
    export.exports(chart, {"step": curve.steps, "lr": curve.lrs}, charts.noam_frame(curve), "noam-schedule",
                   "train_noam_chart")


def smoothing_plot(smoothing: float, classifier: bool, scale: float) -> None:
    """Targets for the chosen task's kind, their formula, and the KL = CE − H check."""
    st.markdown("**Label smoothing.** The loss does not ask for 100 % on the right token: it keeps "
                "1 − ε there and spreads ε evenly over the other tokens. The model becomes less over-confident: "
                "the paper reports that this hurts perplexity but improves accuracy and BLEU (for translation; "
                "a classifier has no BLEU).")
    if classifier:
        st.markdown("This task is a **classifier**: there is no padding class, so ε is shared by the V − 1 "
                    "other classes.")
        st.latex(CLASSIFIER_LATEX)
    else:
        st.markdown("This task writes **sequences**: padding never receives probability (and padded positions "
                    "do not count), so ε is shared by the V − 2 tokens that are neither the target nor padding.")
        st.latex(SEQUENCE_LATEX)
    example = lessons.smoothing_example(smoothing, classifier=classifier)
    matrix, (rows, cols) = example.matrix, charts.smoothing_labels(example)
    share = lessons.other_share(smoothing, len(cols), classifier)
    chart = teaching_charts.smoothing_log_chart(matrix, rows, cols, smoothing=smoothing, font_scale=scale)
    st.altair_chart(chart, width="content")
    st.caption(f"V = {len(cols)}: the target gets 1 − ε = {1 - smoothing:.3g}, every other "
               f"{'class' if classifier else 'non-pad token'} ε/(V − {1 if classifier else 2}) = {share:.4g}. "
               "The colours are on a logarithmic scale so that this small share does not look like 0."
               + ("" if classifier else " The last target is padding: its row is all 0 and counts for nothing."))
    table = pd.DataFrame(matrix, index=rows, columns=cols)
    with st.popover("The numbers", icon=":material/table:"):
        st.dataframe(table.style.format("{:.4f}"), key="train_smoothing_table")
    export.exports(chart, {"targets": matrix}, table.reset_index(names="example"), "label-smoothing",
                   "train_smoothing_chart")
    st.markdown(("**The same identity for a classifier.** The notes' classifier (notes 000) trains with a plain "
                 "cross-entropy; their KL-divergence `LabelSmoothing` (notes 004) is for sequences. The identity "
                 "still holds here: " if classifier else
                 "**The notes' form: KL divergence.** The notes train with a KL-divergence loss between the "
                 "smoothed targets q and the model's distribution p; the trainer here uses the cross-entropy "
                 "against q. ")
                + "KL and cross-entropy against q differ only by the entropy H(q) of the targets, which no weight "
                "can change, so both have the same gradients.")
    st.latex(KL_LATEX)
    check = lessons.kl_check(smoothing, classifier=classifier)
    st.latex(rf"\text{{example 1:}}\quad \mathrm{{KL}} = {check.kl:.4f} = {check.cross_entropy:.4f} - "
             rf"{check.entropy:.4f} = \mathrm{{CE}} - H(q)")
    st.caption(f"p = softmax of seeded random logits; the trainer's own loss (core.training.smoothed_loss) on this row is "
               f"{check.trainer_loss:.4f}, the CE above.")


def teaching_plots(d_model: int, warmup: int, steps: int, smoothing: float, classifier: bool) -> None:
    """Both figures, one above the other (full width, so no formula is cut on a projector)."""
    scale = widgets.font_scale()
    noam_plot(d_model, warmup, steps, scale)
    st.divider()
    smoothing_plot(smoothing, classifier, scale)
