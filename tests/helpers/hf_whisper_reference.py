"""Our Whisper's parameters under Hugging Face ``transformers``' names, so the reference model can load
the very same weights (used by ``tests/e2e/test_whisper.py`` and ``python -m bench whisper``)."""

from __future__ import annotations

import torch


def hf_whisper_state(model) -> dict[str, torch.Tensor]:
    """Our parameters under transformers' Whisper names (fused Q/K/V split; K has no bias there)."""
    ours = model.state_dict()
    c, d = model.config, model.config.d_model
    state = {"model.encoder.conv1.weight": ours["conv1.weight"], "model.encoder.conv1.bias": ours["conv1.bias"],
             "model.encoder.conv2.weight": ours["conv2.weight"], "model.encoder.conv2.bias": ours["conv2.bias"],
             "model.encoder.embed_positions.weight": ours["encoder_positions"],
             "model.decoder.embed_tokens.weight": ours["embed.weight"],
             "model.decoder.embed_positions.weight": ours["decoder_positions"],
             "proj_out.weight": ours["embed.weight"]}
    for stack in ("encoder", "decoder"):
        state[f"model.{stack}.layer_norm.weight"] = ours[f"{stack}_norm.weight"]
        state[f"model.{stack}.layer_norm.bias"] = ours[f"{stack}_norm.bias"]

    def split(theirs: str, weight: torch.Tensor, bias: torch.Tensor, names: tuple[str, ...]) -> None:
        for name, w, b in zip(names, weight.split(d), bias.split(d)):
            state[f"{theirs}.{name}.weight"] = w
            if name == "k_proj":
                assert torch.equal(b, torch.zeros_like(b)), "Whisper's key projection has no bias"
            else:
                state[f"{theirs}.{name}.bias"] = b

    for stack, layers in (("encoder", c.n_encoder_layers), ("decoder", c.n_decoder_layers)):
        for i in range(layers):
            ours_p, theirs = f"{stack}_layers.{i}", f"model.{stack}.layers.{i}"
            self_attn = "attn" if stack == "encoder" else "self_attn"
            self_norm = "attn_norm" if stack == "encoder" else "self_norm"
            qkv = f"{ours_p}.{self_attn}.qkv"
            split(f"{theirs}.self_attn", ours[f"{qkv}.weight"], ours[f"{qkv}.bias"], ("q_proj", "k_proj", "v_proj"))
            pairs = {f"{self_attn}.out": "self_attn.out_proj", self_norm: "self_attn_layer_norm",
                     "ffn.up": "fc1", "ffn.down": "fc2", "ffn_norm": "final_layer_norm"}
            if stack == "decoder":
                split(f"{theirs}.encoder_attn", ours[f"{ours_p}.cross_attn.kv.weight"],
                      ours[f"{ours_p}.cross_attn.kv.bias"], ("k_proj", "v_proj"))
                pairs.update({"cross_attn.query": "encoder_attn.q_proj", "cross_attn.out": "encoder_attn.out_proj",
                              "cross_norm": "encoder_attn_layer_norm"})
            for mine, hf in pairs.items():
                for field in ("weight", "bias"):
                    state[f"{theirs}.{hf}.{field}"] = ours[f"{ours_p}.{mine}.{field}"]
    return state
