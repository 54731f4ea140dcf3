"""The Lesson's model map: a compact diagram of the loaded encoder-decoder beside every stage.

Drawn from the traced model's own sizes (:func:`core.lessons.model_map`): embeddings → encoder layer × N
→ decoder layer × N → linear + softmax. The current stage's block is highlighted (a primary button
marked ▶); clicking a block jumps to its first stage; hovering a block lists the sizes of its arrays.
A block with no stage of its own (the decoder's feed-forward, the same maths as the encoder's) is shown
but disabled. Also which block each stage belongs to, and which family notes it shows. Its words are the
``lesson`` messages ``map.*`` in the session's language; a block is named by its term (``map.blocks.<term>``).
"""

from __future__ import annotations

import streamlit as st

from app import i18n
from app.ui import language
from app.views.parts import lesson_tracks as tracks
from core import lessons

# For each stage of the encoder-decoder track (app.views.lesson.STAGES order): its block of the map, and its
# topic for :func:`core.lessons.stage_notes` (None: nothing a family changes there); other tracks' in lesson_tracks.
STAGE_BLOCKS = tuple(s.block for s in tracks.ENCODER_DECODER)
STAGE_TOPICS = tuple(s.topic for s in tracks.ENCODER_DECODER)
KEY_PREFIX = "lesson_map_"
GROUPS = (("input", None), ("encoder", "map.encoder"), ("decoder", "map.decoder"), ("output", None))  # heading

MAP_CSS = """<style>
[data-testid="stColumn"]:has(> div > [class*="st-key-lesson_map"]) { position: sticky; top: 3.25rem; align-self: flex-start; }
.st-key-lesson_map button { min-height: 1.3rem; padding: 0.1rem 0.4rem; line-height: 1.1; }
.st-key-lesson_map button p { font-size: 0.72rem !important; line-height: 1.1; }
.st-key-lesson_map, .st-key-lesson_map [data-testid="stVerticalBlock"] { gap: 0.1rem; }
.st-key-lesson_map [data-testid="stCaptionContainer"] p, .st-key-lesson_map [data-testid="stMarkdownContainer"] p {
  font-size: 0.7rem !important; line-height: 1.2; }
.st-key-lesson_map [class*="st-key-lesson_group_"] { padding: 0.3rem; }
[data-testid="stMain"] [data-testid="stSliderThumbValue"] { white-space: nowrap; }
</style>"""


ALIASES = {"add_norm2": "ffn"}  # the FFN stage shows the second Add & Norm too


def first_stage(block: str, blocks: tuple[str, ...] = STAGE_BLOCKS) -> int | None:
    """The first stage of ``block`` among a track's stage ``blocks``, or None when no stage draws it (the
    decoder's feed-forward)."""
    block = ALIASES.get(block, block)
    return blocks.index(block) if block in blocks else None


def _jump(stage: int) -> None:
    st.session_state["lesson_stage"] = stage


def label(block: lessons.MapBlock) -> str:
    """A block's name in the session's language (its English label where its term has no message)."""
    found = i18n.catalog(language.current(), "lesson").get(f"map.blocks.{block.term}")
    return block.label if found is None else found.format(**block.values)


def sublayer(model: lessons.ModelMap) -> str:
    """How every sub-layer is wrapped, in the session's language."""
    norm = "RMSNorm" if model.norm_type == "rmsnorm" else "LayerNorm"
    return language.words("lesson")(f"map.sublayer_{'pre' if model.norm == 'pre' else 'post'}", norm=norm)


def _block(block: lessons.MapBlock, current: str, blocks: tuple[str, ...]) -> None:
    here, t = block.key == current, language.words("lesson")
    stage = first_stage(block.key, blocks)
    sizes = "  \n".join(block.sizes)
    help_text = (f"{sizes}  \n{t('map.no_stage')}" if stage is None else f"{sizes}  \n{t('map.stage', n=stage + 1)}")
    st.button(("▶ " if here else "") + label(block), key=KEY_PREFIX + block.key, type="primary" if here else "secondary",
              help=help_text, on_click=_jump, args=(stage,) if stage is not None else (0,), disabled=stage is None,
              width="stretch")


def draw(model: lessons.ModelMap, stage: int, blocks: tuple[str, ...] = STAGE_BLOCKS) -> None:
    """The map of ``model`` with the block of Lesson stage ``stage`` highlighted (``blocks``: each stage's block,
    in the track's order)."""
    current, t = blocks[stage], language.words("lesson")
    st.html(MAP_CSS)
    with st.container(key="lesson_map"):
        st.markdown(t("map.title"))
        st.caption(t("map.facts", d_model=model.d_model, heads=model.n_heads, d_ff=model.d_ff, norm=model.norm))
        for group, heading in GROUPS:
            shown = model.group(group)
            if not shown:
                continue  # a single-stack model: no encoder (decoder-only) or no decoder (encoder-only)
            layers = model.n_encoder_layers if group == "encoder" else model.n_decoder_layers
            box = st.container(border=heading is not None, key=f"lesson_group_{group}")
            with box:
                if heading is not None:
                    last = "decoder" if model.n_decoder_layers else "encoder"  # the sub-layer wrapping, said once
                    st.caption(t(heading, n=layers) + (f" · {sublayer(model)}" if group == last else ""))
                for block in shown:
                    _block(block, current, blocks)
