"""The Attention playground's section 6: the loaded translation model's layer-1 encoder self-attention
rebuilt as PyTorch's ``nn.MultiheadAttention`` (its stacked W_qkv and W^O copied in), run on the sentence,
and its maps and output compared with the model's own. Its words are the ``playground`` messages' ``torch``
section in the session's language."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import glossary, language, widgets
from app import resources
from core import lessons


def _call(result: lessons.TorchMHA) -> str:
    """The Python a student would write, with this model's sizes."""
    (three_d, d), (d_out, _) = result.in_proj_shape, result.out_proj_shape
    t, h = len(result.tokens), result.num_heads
    return (f"mha = nn.MultiheadAttention(embed_dim={result.embed_dim}, num_heads={h}, batch_first=True)\n"
            f"mha.in_proj_weight.copy_(W_qkv)      # ({three_d}, {d}): W_q; W_k; W_v stacked\n"
            f"mha.in_proj_bias.copy_(b_qkv)        # ({three_d},)\n"
            f"mha.out_proj.weight.copy_(W_O)       # ({d_out}, {d})\n"
            f"mha.out_proj.bias.copy_(b_O)         # ({d_out},)\n"
            "out, maps = mha(x, x, x, need_weights=True, average_attn_weights=False)\n"
            f"# x: (1, {t}, {d}) layer 1's input   out: (1, {t}, {d})   maps: (1, {h}, {t}, {t}), one per head")


def render(fs: float) -> None:
    """Draw the body of the Playground's section 6 (the head follows section 5's ``pg_qkv_head``)."""
    t = language.words("playground")
    st.markdown(t("torch.intro"))
    loaded = widgets.current_checkpoint()
    ckpt = loaded[1] if loaded else None
    if ckpt is None or ckpt.info.task != "translation" or ckpt.config.score != "scaled_dot":
        st.info(t("torch.choose"))
        return
    result = widgets.attempt("run nn.MultiheadAttention with the model's weights", resources.model_lesson,
                             lessons.torch_mha, ckpt, glossary.SOURCE_SENTENCE)
    if result is None:
        return
    st.code(_call(result), language="python")
    st.success(t("torch.agree", source=glossary.SOURCE_SENTENCE, map_error=result.map_error, heads=result.num_heads,
                 output_error=result.output_error))
    head = min(int(st.session_state.get("pg_qkv_head", 0)), result.num_heads - 1)
    tokens = list(result.tokens)
    st.dataframe(pd.DataFrame(result.torch_maps[head], index=pd.Index(tokens, name=t("torch.query_token")), columns=tokens),
                 width="content", key="pg_mha_map")
    st.caption(t("torch.caption", head=head + 1))
