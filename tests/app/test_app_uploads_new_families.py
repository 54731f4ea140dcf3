"""The families added for the models researchers download today open in the app as every other family does: a zipped
folder is identified and kept by the upload path, its maps (computed in the upload's worker process) equal what
core computes on the original folder, and a ``--models`` folder lists it. One opens on Explore."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app import resources
from app.services import catalog, storage
from core import explain, identify, load_pretrained
from tests.helpers.apptest_helpers import open_page
from tests.helpers.uploads import upload, upload_folders, zipped

transformers = pytest.importorskip("transformers")
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, VOCAB, reference_model, save_folder  # noqa: E402
from tests.helpers.hf_reference import (REF_WORDS, ROBERTA_SPECIALS, randomize, ref_wordpiece,  # noqa: E402
                                        save_ref_folder)

TEXT = "the cat sat on a mat"
_SIZES = dict(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
BUILDERS = {
    "gemma2": lambda: transformers.Gemma2Config(**_SIZES, head_dim=8, sliding_window=3),
    "gemma3_text": lambda: transformers.Gemma3TextConfig(**_SIZES, head_dim=8, sliding_window=3,
                                                         sliding_window_pattern=2),
    "phi3": lambda: transformers.Phi3Config(**_SIZES, partial_rotary_factor=0.5),
}


ENCODERS = {
    "mpnet": lambda: transformers.MPNetModel(transformers.MPNetConfig(
        vocab_size=len(ROBERTA_SPECIALS) + len(REF_WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=32, max_position_embeddings=66)),
    "deberta-v2": lambda: transformers.DebertaV2ForSequenceClassification(transformers.DebertaV2Config(
        vocab_size=len(ROBERTA_SPECIALS) + len(REF_WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=32, max_position_embeddings=64, relative_attention=True, position_buckets=8,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False)),
    "modernbert": lambda: transformers.ModernBertForMaskedLM(transformers.ModernBertConfig(
        vocab_size=len(ROBERTA_SPECIALS) + len(REF_WORDS), hidden_size=16, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=24, max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        cls_token_id=0, sep_token_id=2, local_attention=4)),
}


def folder_of(kind: str, root: Path) -> Path:
    if kind in ENCODERS:
        return save_ref_folder(randomize(ENCODERS[kind]()), root / f"tiny-{kind}", ref_wordpiece(ROBERTA_SPECIALS))
    return save_folder(reference_model(BUILDERS[kind]()), root / f"tiny-{kind}", add_bos=True)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {kind: folder_of(kind, root) for kind in [*BUILDERS, *ENCODERS]}


@pytest.mark.parametrize("kind", sorted([*BUILDERS, *ENCODERS]))
def test_a_zipped_folder_is_kept_and_opens_as_the_original_folder(runs, folders, kind):
    folder = folders[kind]
    assert identify(folder).kind == "pretrained"
    owner = storage.new_owner()
    key = catalog.save_upload(owner, f"{kind}.zip", zipped(folder, prefix=f"{folder.name}/"))
    entry = next(e for e in catalog.list_entries(owner)[0] if e.key == key)
    kept = load_pretrained(entry.path)
    assert entry.pretrained and kept.family == kind
    expected, got = explain(load_pretrained(folder), TEXT), explain(kept, TEXT)
    for name, maps in expected.attention.items():
        np.testing.assert_array_equal(got.attention[name], maps)


def test_a_zipped_hugging_face_whisper_folder_is_kept_and_transcribes_as_the_original(runs, tmp_path):
    from core import explain_speech
    from tests.helpers.hf_whisper_folder import reference_whisper, save_whisper, whisper_tokenizer

    folder = save_whisper(reference_whisper(whisper_tokenizer().get_vocab_size()), tmp_path / "whisper-tiny",
                          multilingual=True)
    owner = storage.new_owner()
    key = catalog.save_upload(owner, "whisper-tiny.zip", zipped(folder, prefix="whisper-tiny/"))
    entry = next(e for e in catalog.list_entries(owner)[0] if e.key == key)
    kept = load_pretrained(entry.path)
    assert (kept.family, kept.head) == ("whisper", "speech")
    clip = Path(__file__).resolve().parents[2] / "assets" / "audio" / "i_have_two_cats.flac"
    ours, original = (explain_speech(m, clip, language="en", max_new_tokens=4) for m in (kept, load_pretrained(folder)))
    assert ours.target_tokens == original.target_tokens
    np.testing.assert_array_equal(ours.attention["cross"], original.attention["cross"])


def test_a_models_folder_lists_each_family(runs, folders, tmp_path, monkeypatch):
    shelf = tmp_path / "shelf"
    (shelf / "org").mkdir(parents=True)
    for folder in folders.values():
        _copy(folder, shelf / "org" / folder.name)
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(shelf))
    entries, problems = catalog.list_entries()
    listed = sorted(e.name for e in entries if e.source == "models")
    assert listed == sorted(f"org/{f.name}" for f in folders.values()) and problems == []


def _copy(source: Path, target: Path) -> None:
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())


def test_a_zipped_gemma2_folder_opens_on_explore_and_is_explained_in_its_worker(runs, folders):
    at = upload(open_page("explore"), "tiny gemma2.zip", zipped(folders["gemma2"], prefix="tiny-gemma2/"))
    [stored] = upload_folders(runs)
    assert at.session_state["ckpt"] == f"upload:{stored.name}" and not at.error
    assert any(c.value == "Most likely next token" for c in at.caption)
    entry = next(e for e in catalog.list_entries(at.session_state["_upload_owner"])[0] if e.source == "upload")
    expected = explain(load_pretrained(folders["gemma2"]), TEXT)
    got = resources.explain_entry(entry, TEXT)  # in the upload's worker process
    np.testing.assert_allclose(got.attention["decoder"], expected.attention["decoder"], atol=1e-6)
    assert got.prediction.text == expected.prediction.text


def test_whisper_folders_are_offered_to_the_whisper_page_and_kept_out_of_explores_picker(runs, tmp_path,
                                                                                        monkeypatch):
    from tests.helpers.hf_whisper_folder import reference_whisper, save_whisper, whisper_tokenizer

    vocab = whisper_tokenizer().get_vocab_size()
    shelf = tmp_path / "shelf"
    save_whisper(reference_whisper(vocab, encoder_layers=1, decoder_layers=1), shelf / "openai" / "whisper-tiny",
                 multilingual=True)
    english = save_whisper(reference_whisper(vocab, seed=1), tmp_path / "whisper-tiny.en", multilingual=False)
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(shelf))
    owner = storage.new_owner()
    catalog.save_upload(owner, "whisper-tiny.en.zip", zipped(english, prefix="whisper-tiny.en/"))
    listed = catalog.list_entries(owner)[0]
    assert [e for e in listed if e.source == "models"] == []  # not a text model for Explore
    speech = catalog.speech_entries(owner)
    assert [(e.source, e.label) for e in speech] == [("models", "my models · openai/whisper-tiny"),
                                                     ("upload", "uploaded · whisper-tiny.en.zip")]
    assert all(e.untrusted for e in speech)  # their runs go to a worker process


@pytest.mark.slow  # a worker process and the page: some 25 s on 2 shared cores
def test_the_whisper_page_offers_models_folder_and_uploaded_whispers_and_transcribes_in_the_worker(runs, tmp_path,
                                                                                                   monkeypatch):
    from core import explain_speech
    from tests.helpers.hf_whisper_folder import reference_whisper, save_whisper, whisper_tokenizer

    vocab = whisper_tokenizer().get_vocab_size()
    shelf = tmp_path / "shelf"  # one layer each way: the page draws a single layer without a slider
    folder = save_whisper(reference_whisper(vocab, encoder_layers=1, decoder_layers=1),
                          shelf / "openai" / "whisper-tiny", multilingual=True)
    english = save_whisper(reference_whisper(vocab, seed=1), tmp_path / "whisper-tiny.en", multilingual=False)
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(shelf))
    assert [e.name for e in catalog.list_entries()[0] if e.source == "models"] == []  # not a text model for Explore
    name = "my models · openai/whisper-tiny"
    page = open_page("whisper", query={"speech_model": name, "speech_language": "en"})  # run once, in its worker
    at = upload(page, "whisper-tiny.en.zip", zipped(english, prefix="whisper-tiny.en/"))  # the same run, cached
    assert at.radio(key="speech_model").value == name
    assert "uploaded · whisper-tiny.en.zip" in at.radio(key="speech_model").options
    assert not at.exception and not at.error, [e.value for e in at.error]
    clip = Path(__file__).resolve().parents[2] / "assets" / "audio" / "the_black_cat_sleeps.flac"
    expected = explain_speech(load_pretrained(folder), clip, language="en", max_new_tokens=64)
    shown = " ".join(str(m.value) for m in [*at.markdown, *at.caption, *at.text])
    assert f"by {name}" in shown and (expected.prediction.text or "(nothing)") in shown
