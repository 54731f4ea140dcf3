"""How sure the model was of each token it produced: the tokens in a row, each over a bar as long as its
probability, orange where unsure.

Pure functions: data in, HTML (tokens escaped, never read as markup) or one line of text out.
"""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np

from app.charts.base import visible

UNSURE = 0.5  # a token the model gave less than this probability is called unsure
SURE_COLOR, UNSURE_COLOR = "#0072B2", "#D55E00"  # Okabe-Ito blue and vermillion: colour-blind safe, both themes
CLASS = "attnscope-confidence"
# sizes in rem: presentation mode's larger root font scales them; greys as translucent grey: both themes
CSS = f"""<style>
.{CLASS} {{ display: flex; flex-wrap: wrap; gap: 0.5rem 0.6rem; margin: 0.1rem 0 0.2rem 0; }}
.{CLASS} .token {{ display: inline-flex; flex-direction: column; gap: 0.15rem; min-width: 2.5rem; }}
.{CLASS} .text {{ white-space: pre; line-height: 1.2; font-size: 1.1rem; }}
.{CLASS} .meter {{ height: 0.35rem; border-radius: 2px; background: rgba(128, 128, 128, 0.25); }}
.{CLASS} .meter > span {{ display: block; height: 100%; border-radius: 2px; }}
.{CLASS} .value {{ font-size: 0.75rem; opacity: 0.75; line-height: 1.1; }}
.{CLASS}-legend {{ font-size: 0.8rem; opacity: 0.75; line-height: 1.3; }}
</style>"""


def token_confidence(tokens: Sequence[str], probabilities: np.ndarray) -> str:
    """The produced tokens left to right as HTML, each over a bar as long as the probability the model gave it
    (blue, orange below :data:`UNSURE`) with that probability in per cent under it, a tenth of a per cent on
    hover, and a line saying how to read them.

    HTML, not a chart: a class reads the numbers without hovering, a long output wraps, and an edit redraws no
    second chart beside the head view (an HTML block costs the browser a fraction of a Plotly figure)."""
    probs = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)  # (T,)
    cells = []
    for token, p in zip(tokens, probs):
        shown = html.escape(visible(token))
        colour = SURE_COLOR if p >= UNSURE else UNSURE_COLOR
        cells.append(f'<span class="token" role="listitem" title="{shown}: {p:.1%}"><span class="text">{shown}'
                     f'</span><span class="meter"><span style="width: {p:.1%}; background: {colour}"></span></span>'
                     f'<span class="value">{p:.0%}</span></span>')
    legend = (f"The bar under each token is the probability the model gave it; orange below {UNSURE:.0%}, where the "
              "model was unsure.")
    return (f'{CSS}<div class="{CLASS}" role="list" aria-label="Each produced token and the probability the model '
            f'gave it">{"".join(cells)}</div><div class="{CLASS}-legend">{legend}</div>')


def unreliable_message(unknown_words: Sequence[tuple[str, Sequence[str]]], unknown_token: str) -> str | None:
    """One line saying the output rests on a guess, naming the words the model read as ``unknown_token``
    (with the nearest words it knows), or None when it knew every word."""
    if not unknown_words:
        return None
    parts = [f"“{word}”" + (f" (it knows {', '.join(near)})" if near else "") for word, near in unknown_words[:5]]
    more = f" and {len(unknown_words) - 5} more" if len(unknown_words) > 5 else ""
    return (f"Unreliable output: the model does not know {'; '.join(parts)}{more}. It reads "
            f"{'them' if len(unknown_words) > 1 else 'it'} as {unknown_token} and guesses.")
