"""ModelConfig: JSON round trip and validation errors that name the offending field."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from core.config import ARCHITECTURES, ModelConfig
from tests.helpers.tiny import tiny_config


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_json_round_trip_gives_an_equal_config(architecture: str) -> None:
    config = tiny_config(architecture, norm="pre", positional="learned", score="additive", pe_base=100.0)
    text = config.to_json()
    again = ModelConfig.from_json(text)
    assert again == config
    assert again.to_json() == text
    assert json.loads(text) == config.to_dict()
    assert set(json.loads(text)) == {f.name for f in fields(ModelConfig)}


def test_round_trip_keeps_tied_embeddings_and_pad_id() -> None:
    config = tiny_config("decoder", tie_embeddings=True, pad_id=3)
    again = ModelConfig.from_dict(json.loads(config.to_json()))
    assert again.tie_embeddings is True and again.pad_id == 3
    assert again == config


def test_json_keys_are_sorted_for_stable_diffs() -> None:
    keys = list(json.loads(tiny_config().to_json()))
    assert keys == sorted(keys)


def test_d_model_not_divisible_by_heads_names_both() -> None:
    with pytest.raises(ValueError) as caught:
        tiny_config(d_model=18, n_heads=4)
    assert "d_model" in str(caught.value) and "n_heads" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("architecture", "rnn"), ("norm", "middle"), ("positional", "rotary"), ("score", "cosine")],
)
def test_unknown_choice_is_rejected_naming_the_field(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        tiny_config(**{field: value})


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, float("nan")])
def test_dropout_out_of_range_is_rejected(dropout: float) -> None:
    with pytest.raises(ValueError, match="dropout"):
        tiny_config(dropout=dropout)


@pytest.mark.parametrize("field", ["d_model", "n_heads", "d_ff", "max_len", "n_encoder_layers", "pad_id"])
def test_bool_where_int_expected_is_rejected(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        tiny_config(**{field: True})


@pytest.mark.parametrize(("field", "value"), [("d_model", 16.0), ("max_len", "24"), ("norm", 1), ("dropout", "0")])
def test_wrong_type_is_rejected_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        tiny_config(**{field: value})


def test_int_is_accepted_where_float_expected() -> None:
    assert tiny_config(pe_base=100).pe_base == 100


@pytest.mark.parametrize("field", ["d_model", "n_heads", "d_ff", "max_len"])
def test_non_positive_size_is_rejected(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        tiny_config(**{field: 0})


def test_unknown_key_in_from_dict_is_rejected_by_name() -> None:
    data = tiny_config().to_dict()
    data["n_layerz"] = 3
    with pytest.raises(ValueError, match="n_layerz"):
        ModelConfig.from_dict(data)


@pytest.mark.parametrize("data", [[1, 2], "config", None])
def test_from_dict_needs_a_mapping(data: object) -> None:
    with pytest.raises(ValueError, match="JSON object"):
        ModelConfig.from_dict(data)  # type: ignore[arg-type]


def test_malformed_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        ModelConfig.from_json(tiny_config().to_json()[:-5])


@pytest.mark.parametrize(
    ("architecture", "field"),
    [("encoder-decoder", "src_vocab_size"), ("encoder-decoder", "tgt_vocab_size"),
     ("encoder", "src_vocab_size"), ("decoder", "tgt_vocab_size")],
)
def test_missing_vocab_for_the_architecture_is_rejected(architecture: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        tiny_config(architecture, **{field: 0})


def test_vocab_the_architecture_does_not_use_may_be_zero() -> None:
    assert tiny_config("decoder", src_vocab_size=0).src_vocab_size == 0
    assert tiny_config("encoder", tgt_vocab_size=0).tgt_vocab_size == 0


@pytest.mark.parametrize("n_classes", [0, 1])
def test_encoder_needs_at_least_two_classes(n_classes: int) -> None:
    with pytest.raises(ValueError, match="n_classes"):
        tiny_config("encoder", n_classes=n_classes)


def test_tied_embeddings_need_a_decoder() -> None:
    with pytest.raises(ValueError, match="tie_embeddings"):
        tiny_config("encoder", tie_embeddings=True)


@pytest.mark.parametrize("pad_id", [-1, 11])
def test_pad_id_outside_the_vocabulary_is_rejected(pad_id: int) -> None:
    with pytest.raises(ValueError, match="pad_id"):
        tiny_config(pad_id=pad_id)


@pytest.mark.parametrize("pe_base", [1.0, 0.5, float("nan")])
def test_pe_base_must_exceed_one(pe_base: float) -> None:
    with pytest.raises(ValueError, match="pe_base"):
        tiny_config(pe_base=pe_base)


@pytest.mark.parametrize(
    ("architecture", "kinds"),
    [("encoder-decoder", ("encoder", "decoder", "cross")), ("encoder", ("encoder",)), ("decoder", ("decoder",))],
)
def test_attention_kinds_per_architecture(architecture: str, kinds: tuple[str, ...]) -> None:
    config = tiny_config(architecture)
    assert config.attention_kinds == kinds
    assert config.head_dim == 4


def test_config_is_frozen() -> None:
    config = tiny_config()
    with pytest.raises(AttributeError):
        config.d_model = 32  # type: ignore[misc]
