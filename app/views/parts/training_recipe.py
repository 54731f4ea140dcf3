"""The Architecture page's last section: how the paper trains the model — Adam's settings, several
warm-up schedules side by side, label smoothing's penalty on over-confidence, and dropout — each
number computed by ``core`` (the trainer's own functions), with their code one click away.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import export, glossary, vega
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
    recipe = lessons.paper_recipe()
    st.markdown(
        f"**Adam** with β₁ = {recipe.beta1:g}, β₂ = {recipe.beta2:g} and ε = {recipe.eps:g} — the settings the "
        "trainer here really uses (read back from the optimiser it builds). Its learning rate is not fixed: it "
        "**warms up** linearly, then decays with the inverse square root of the step.")
    rows = recipe.adam_rows()
    st.dataframe(pd.DataFrame([(name, f"{paper:g}", f"{ours:g}") for name, paper, ours in rows],
                              columns=["Adam setting", "the paper (§5.3)", "this trainer"]),
                 hide_index=True, width="content", key="arch_adam_table")
    b1, b2, eps = (_tex_number(ours) for _, _, ours in rows)
    st.markdown("Each step, for every weight θ with gradient g, Adam keeps running means of g and g² and "
                "moves θ by their bias-corrected ratio — one rule:")
    st.latex(rf"m_t = {b1}\,m_{{t-1}} + (1 - {b1})\,g_t,\quad v_t = {b2}\,v_{{t-1}} + (1 - {b2})\,g_t^2,\quad "
             rf"\theta_t = \theta_{{t-1}} - \text{{lrate}}_t\,\frac{{m_t / (1 - {b1}^t)}}"
             rf"{{\sqrt{{v_t / (1 - {b2}^t)}} + {eps}}}")
    glossary.show_code(training.make_optimizer, "The code: core.training.make_optimizer")
    st.latex(r"\text{lrate} = d_{model}^{-0.5}\cdot\min(\text{step}^{-0.5},\ \text{step}\cdot"
             r"\text{warmup}^{-1.5})")
    curves = lessons.warmup_schedules()
    frame = pd.concat([pd.DataFrame({"step": c.steps, "schedule": label, "learning rate": c.lrs})
                       for label, c in curves])
    chart = vega.draw(charts.lines_chart, frame, x="step", y="learning rate", series="schedule", font_scale=fs,
                      chart_title="Three warm-up schedules side by side",
                      subtitle="a longer warm-up peaks later and lower; a narrower model peaks higher")
    st.caption(" · ".join(f"{label}: peak {c.peak_lr:.3g} at step {c.peak_step:,}" for label, c in curves))
    glossary.show_code(training.noam_lr, "The code: core.training.noam_lr")
    export.export_chart(chart, "warmup-schedules", "arch_warmup_chart")
    penalty = lessons.confidence_penalty(recipe.label_smoothing)
    st.markdown(
        f"**Label smoothing** (ε = {recipe.label_smoothing:g}) trains against a target that keeps 1 − ε on the right "
        "token and spreads ε over the others. The loss is then lowest when the model gives the right token "
        f"probability {penalty.best:.2f}, not 1: being more confident than that is *penalised*. The paper notes "
        "the cost — it hurts perplexity, as the model learns to be more unsure — and the gain: better accuracy "
        "and BLEU.")
    frame = pd.concat([pd.DataFrame({"confidence": penalty.confidence, "target": name, "loss": loss})
                       for name, loss in ((f"smoothed, ε = {penalty.smoothing:g}", penalty.smoothed),
                                          ("one-hot (ε = 0)", penalty.plain))])
    vega.draw(charts.lines_chart, frame, x="confidence", y="loss", series="target", font_scale=fs,
              chart_title="Loss of one prediction vs its confidence in the right token",
              subtitle="5 tokens, one of them padding (the Annotated Transformer's example)",
              rule_at=penalty.best, rule_label=f"lowest at {penalty.best:.2f}")
    glossary.show_code(training.smoothed_loss, "The code: core.training.smoothed_loss")
    st.markdown(
        f"**Dropout** (p = {recipe.dropout:g} by default): during training a random share p of each sublayer's "
        "output (and of the embeddings + positional encoding) is set to 0 before the residual addition, and the "
        "rest is scaled by 1/(1 − p), so the network cannot lean on any single unit. At inference — every "
        "number on the Learn pages — dropout is off and changes nothing.")
