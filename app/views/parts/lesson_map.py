"""The Lesson's model map: a compact diagram of the loaded encoder-decoder beside every stage.

Drawn from the traced model's own sizes (:func:`core.lessons.model_map`): embeddings → encoder layer × N
→ decoder layer × N → linear + softmax, as ONE Streamlit component (``lesson_map.js`` / ``lesson_map.css`` here,
components v2, in the page's DOM): a stage's run sends one element for the whole map, not a button per block.
The current stage's block is marked ▶; clicking a block jumps to its first stage (the component's one-shot
``jump`` trigger); hovering a block lists the sizes of its arrays. A block with no stage of its own (the decoder's
feed-forward, the same maths as the encoder's) is shown but disabled. Also which block each stage belongs to, and
which family notes it shows. Its words are the ``lesson`` messages ``map.*`` in the session's language; a block is
named by its term (``map.blocks.<term>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from app import i18n
from app.ui import language
from app.views.parts import lesson_tracks as tracks
from core import lessons

# For each stage of the encoder-decoder track (app.views.lesson.STAGES order): its block of the map, and its
# topic for :func:`core.lessons.stage_notes` (None: nothing a family changes there); other tracks' in lesson_tracks.
STAGE_BLOCKS = tuple(s.block for s in tracks.ENCODER_DECODER)
STAGE_TOPICS = tuple(s.topic for s in tracks.ENCODER_DECODER)
KEY = "lesson_map_blocks"  # the component's key (inside the container keyed "lesson_map")
GROUPS = (("input", None), ("encoder", "map.encoder"), ("decoder", "map.decoder"), ("output", None))  # heading
HERE = Path(__file__).parent
_COMPONENT = st.components.v2.component("attnscope_lesson_map", js=(HERE / "lesson_map.js").read_text(encoding="utf-8"),
                                        css=(HERE / "lesson_map.css").read_text(encoding="utf-8"), isolate_styles=False)


ALIASES = {"add_norm2": "ffn"}  # the FFN stage shows the second Add & Norm too


def first_stage(block: str, blocks: tuple[str, ...] = STAGE_BLOCKS) -> int | None:
    """The first stage of ``block`` among a track's stage ``blocks``, or None when no stage draws it (the
    decoder's feed-forward)."""
    block = ALIASES.get(block, block)
    return blocks.index(block) if block in blocks else None


def _jumped() -> None:
    """A click on a block: its stage (the component's ``jump`` trigger) becomes the Lesson's stage."""
    stage = (st.session_state.get(KEY) or {}).get("jump")
    if isinstance(stage, int):
        st.session_state["lesson_stage"] = stage


def label(block: lessons.MapBlock) -> str:
    """A block's name in the session's language (its English label where its term has no message)."""
    found = i18n.catalog(language.current(), "lesson").get(f"map.blocks.{block.term}")
    return block.label if found is None else found.format(**block.values)


def sublayer(model: lessons.ModelMap) -> str:
    """How every sub-layer is wrapped, in the session's language."""
    norm = "RMSNorm" if model.norm_type == "rmsnorm" else "LayerNorm"
    return language.words("lesson")(f"map.sublayer_{'pre' if model.norm == 'pre' else 'post'}", norm=norm)


def _block(block: lessons.MapBlock, current: str, blocks: tuple[str, ...]) -> dict[str, Any]:
    """One block as the component draws it: its key, name, whether it is the current stage's, its first stage
    (None: disabled) and its hover text (its arrays' sizes, then the stage it opens)."""
    t, stage = language.words("lesson"), first_stage(block.key, blocks)
    sizes = "\n".join(block.sizes)
    return {"key": block.key, "label": label(block), "here": block.key == current, "stage": stage,
            "help": f"{sizes}\n{t('map.no_stage') if stage is None else t('map.stage', n=stage + 1)}"}


def map_data(model: lessons.ModelMap, stage: int, blocks: tuple[str, ...] = STAGE_BLOCKS) -> dict[str, Any]:
    """What the component draws for ``model`` at Lesson stage ``stage`` (``blocks``: each stage's block, in the
    track's order): the title, the model's facts, and each group of blocks under its heading (None: unboxed)."""
    current, t = blocks[stage], language.words("lesson")
    groups = []
    for group, heading in GROUPS:
        shown = model.group(group)
        if not shown:
            continue  # a single-stack model: no encoder (decoder-only) or no decoder (encoder-only)
        text = None
        if heading is not None:
            layers = model.n_encoder_layers if group == "encoder" else model.n_decoder_layers
            last = "decoder" if model.n_decoder_layers else "encoder"  # the sub-layer wrapping, said once
            text = t(heading, n=layers) + (f" · {sublayer(model)}" if group == last else "")
        groups.append({"name": group, "heading": text, "blocks": [_block(b, current, blocks) for b in shown]})
    return {"title": t("map.title"), "groups": groups,
            "facts": t("map.facts", d_model=model.d_model, heads=model.n_heads, d_ff=model.d_ff, norm=model.norm)}


def draw(model: lessons.ModelMap, stage: int, blocks: tuple[str, ...] = STAGE_BLOCKS) -> None:
    """The map of ``model`` with the block of Lesson stage ``stage`` highlighted (``blocks``: each stage's block,
    in the track's order), one element in a container keyed ``lesson_map``."""
    with st.container(key="lesson_map"):
        _COMPONENT(key=KEY, data=map_data(model, stage, blocks), on_jump_change=_jumped, width="stretch",
                   height="content")
