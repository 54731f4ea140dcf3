"""The Architecture page's last section: how the paper trains the model — Adam's settings, several
warm-up schedules side by side, label smoothing's penalty on over-confidence, and dropout — each
number computed by ``core`` (the trainer's own functions), with their code one click away. Its words are the
``architecture`` messages' ``recipe`` section in the session's language.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import export, glossary, language, vega
from app.charts import concepts as charts
from core import lessons, training


def _tex_number(x: float) -> str:
    """``x`` in LaTeX: 0.98 as is, 1e-09 as 10^{-9}, 2.5e-05 as 2.5 \\times 10^{-5}."""
    mantissa, _, exponent = f"{x:g}".partition("e")
    if not exponent:
        return mantissa
    return ("" if mantissa == "1" else mantissa + r" \times ") + f"10^{{{int(exponent)}}}"


def recipe_section(fs: float) -> None:
    """Draw the body of the Architecture page's "6 · How the paper trains it"."""
    t = language.words("architecture")
    recipe = lessons.paper_recipe()
    st.markdown(t("recipe.adam", beta1=recipe.beta1, beta2=recipe.beta2, eps=recipe.eps))
    rows = recipe.adam_rows()
    st.dataframe(pd.DataFrame([(name, f"{paper:g}", f"{ours:g}") for name, paper, ours in rows],
                              columns=[t("recipe.setting"), t("recipe.paper"), t("recipe.ours")]),
                 hide_index=True, width="content", key="arch_adam_table")
    b1, b2, eps = (_tex_number(ours) for _, _, ours in rows)
    st.markdown(t("recipe.rule"))
    st.latex(rf"m_t = {b1}\,m_{{t-1}} + (1 - {b1})\,g_t,\quad v_t = {b2}\,v_{{t-1}} + (1 - {b2})\,g_t^2,\quad "
             rf"\theta_t = \theta_{{t-1}} - \text{{lrate}}_t\,\frac{{m_t / (1 - {b1}^t)}}"
             rf"{{\sqrt{{v_t / (1 - {b2}^t)}} + {eps}}}")
    glossary.show_code(training.make_optimizer, t("recipe.optimizer_code"))
    st.latex(r"\text{lrate} = d_{model}^{-0.5}\cdot\min(\text{step}^{-0.5},\ \text{step}\cdot"
             r"\text{warmup}^{-1.5})")
    _schedules(t, fs)
    _smoothing(t, recipe, fs)
    st.markdown(t("recipe.dropout", p=recipe.dropout))


def _schedules(t, fs: float) -> None:
    """Several Noam warm-up schedules in one chart, each one's peak, and the code."""
    curves = [(t("recipe.schedule_name", d_model=d, warmup=w), curve)  # warmup_schedules draws SCHEDULES in order
              for (d, w), (_, curve) in zip(lessons.SCHEDULES, lessons.warmup_schedules())]
    step, schedule, rate = t("recipe.step"), t("recipe.schedule"), t("recipe.learning_rate")
    frame = pd.concat([pd.DataFrame({step: c.steps, schedule: label, rate: c.lrs}) for label, c in curves])
    chart = vega.draw(charts.lines_chart, frame, x=step, y=rate, series=schedule, font_scale=fs,
                      chart_title=t("recipe.schedules"), subtitle=t("recipe.schedules_sub"))
    st.caption(" · ".join(t("recipe.peak", label=label, lr=c.peak_lr, step=c.peak_step) for label, c in curves))
    glossary.show_code(training.noam_lr, t("recipe.noam_code"))
    export.export_chart(chart, "warmup-schedules", "arch_warmup_chart")


def _smoothing(t, recipe: lessons.PaperRecipe, fs: float) -> None:
    """Label smoothing's penalty on over-confidence: the loss of one prediction against its confidence."""
    penalty = lessons.confidence_penalty(recipe.label_smoothing)
    st.markdown(t("recipe.smoothing", eps=recipe.label_smoothing, best=penalty.best))
    confidence, target, loss = t("recipe.confidence"), t("recipe.target"), t("recipe.loss")
    frame = pd.concat([pd.DataFrame({confidence: penalty.confidence, target: name, loss: values})
                       for name, values in ((t("recipe.smoothed", eps=penalty.smoothing), penalty.smoothed),
                                            (t("recipe.one_hot"), penalty.plain))])
    vega.draw(charts.lines_chart, frame, x=confidence, y=loss, series=target, font_scale=fs,
              chart_title=t("recipe.loss_title"), subtitle=t("recipe.loss_sub"),
              rule_at=penalty.best, rule_label=t("recipe.lowest", best=penalty.best))
    glossary.show_code(training.smoothed_loss, t("recipe.loss_code"))
