"""Uploads, the pretrained group of the picker and bad files in runs/, under AppTest (issue 15 items 1,
4, 5; issue 11; issue 16 item 9). Results are checked against core on the same file and text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from streamlit.testing.v1 import AppTest

from app.services import catalog, costs, storage, uploads
from app import resources
from core import CheckpointError, explain, load_checkpoint, load_pretrained, pretrained_models, read_info
from tests.helpers.apptest_helpers import open_page, outputs
from tests.helpers.paths import REVERSE
from tests.helpers.pretrained_files import write_tiny_bert, write_tiny_gguf
from tests.helpers.checkpoint_files import hostile_bytes, rewrite
from tests.helpers.uploads import upload, upload_folders, zipped

TEXT = "abcdef"


def nested_bytes(folder: Path) -> bytes:
    """A checkpoint whose metadata nests 200,000 lists deep (a RecursionError inside the loader)."""
    path = folder / "nested.safetensors"
    path.write_bytes(REVERSE.read_bytes())
    rewrite(path, edit=lambda metadata, tensors: metadata.update(task="[" * 200_000 + "]" * 200_000))
    return path.read_bytes()


# ----------------------------------------------------------------------------- item 1: a valid upload
def test_a_valid_upload_is_chosen_and_shown_at_once_under_its_own_name(runs):
    at = upload(open_page("explore"), "My reverse model (v2).safetensors", REVERSE.read_bytes())
    [folder] = upload_folders(runs)
    key = f"upload:{folder.name}"
    assert at.session_state["ckpt"] == key and at.selectbox(key="ckpt").value == key
    assert "uploaded · My reverse model (v2).safetensors" in at.selectbox(key="ckpt").format_func(key)
    assert not at.error
    assert "My reverse model (v2).safetensors" in at.markdown[0].value  # as uploaded
    text = at.text_area(key="text").value
    assert explain(REVERSE, text).prediction.text in outputs(at)
    assert read_info(uploads.payload_of(folder)).sha256 == read_info(REVERSE).sha256


def test_uploads_belong_to_the_session_that_made_them(runs):
    mine = upload(open_page("explore"), "mine.safetensors", REVERSE.read_bytes())
    key = mine.session_state["ckpt"]
    other = open_page("explore", query={"ckpt": key})  # a second session, even with the share link
    assert not [label for label in other.selectbox(key="ckpt").options if label.startswith("uploaded")]
    assert other.session_state["ckpt"] == catalog.DEFAULT_KEY
    assert not any(e.source == "upload" for e in catalog.list_entries(storage.new_owner())[0])
    owner = mine.session_state["_upload_owner"]
    assert [e.name for e in catalog.list_entries(owner)[0] if e.source == "upload"] == ["mine.safetensors"]


def test_a_session_deletes_its_own_upload_on_the_checkpoints_page(runs):
    at = upload(open_page("explore"), "gone.safetensors", REVERSE.read_bytes())
    at.switch_page("views/checkpoints.py").run()
    at.button(key="ckpt_delete").click().run()
    at.button(key="ckpt_delete_confirm").click().run()
    assert not at.exception and upload_folders(runs) == []
    assert at.session_state["ckpt"] == catalog.DEFAULT_KEY


def test_only_own_runs_and_uploads_can_be_deleted(runs):
    shipped = next(e for e in catalog.list_entries()[0] if e.source == "shipped")
    pretrained = [e for e in catalog.list_entries()[0] if e.source == "pretrained"]
    for entry in [shipped, *pretrained]:
        with pytest.raises(ValueError, match="only your own"):
            catalog.delete(entry)
    (runs / "shared.safetensors").write_bytes(REVERSE.read_bytes())
    run = next(e for e in catalog.list_entries(runs_deletable=False)[0] if e.source == "run")
    with pytest.raises(ValueError, match="only your own"):  # a server open to a class: runs are read-only
        catalog.delete(run)
    assert (runs / "shared.safetensors").exists()


# ----------------------------------------------------------------------------- refusals
def test_a_hostile_upload_is_refused_naming_the_field_and_the_page_keeps_working(runs):
    at = upload(open_page("explore"), "bomb.safetensors", hostile_bytes(runs, max_len=1_000_000))
    message = at.error[0].value.replace("\\", "")  # Markdown characters are escaped on the page
    assert "bomb.safetensors is refused" in message and "max_len" in message
    assert upload_folders(runs) == [] and at.session_state["ckpt"] == catalog.DEFAULT_KEY
    assert outputs(at)  # the default checkpoint's prediction is still drawn


def test_the_uploader_lets_go_of_each_file_once_it_is_saved_or_refused(runs):
    """Streamlit keeps an upload's bytes in memory while its widget holds the file: a saved or refused upload
    leaves the uploader empty (a fresh widget), so a session does not keep up to the cap in the server's memory,
    and a refusal's message stays on screen."""
    at = upload(open_page("explore"), "bomb.safetensors", hostile_bytes(runs, max_len=1_000_000))
    assert [u.key for u in at.file_uploader] == ["upload_1"] and at.file_uploader[0].value is None
    assert "bomb.safetensors is refused" in at.error[0].value.replace("\\", "")
    at = upload(at, "mine.safetensors", REVERSE.read_bytes())
    assert [u.key for u in at.file_uploader] == ["upload_2"] and at.file_uploader[0].value is None
    assert not at.error and at.session_state["ckpt"].startswith("upload:")
    assert len(upload_folders(runs)) == 1


def test_a_recursion_bomb_upload_is_a_clear_refusal(runs):
    at = upload(open_page("explore"), "nested.safetensors", nested_bytes(runs))
    assert at.error and "cannot be opened" in at.error[0].value and upload_folders(runs) == []


def test_a_file_is_told_by_its_content_and_refused_saying_what_opens(runs):
    at = upload(open_page("explore"), "model.pt", b"\x80\x04not a checkpoint")  # a pickle, whatever its name
    message = at.error[0].value.replace("\\", "")
    assert "model.pt is a PyTorch pickle and is never loaded" in message and "safe_serialization=True" in message
    at = upload(open_page("explore"), "README", b"text")
    message = at.error[0].value.replace("\\", "")
    assert "README is not a model Attnscope opens" in message and upload_folders(runs) == []
    renamed = upload(open_page("explore"), "reverse.zip", REVERSE.read_bytes())  # a checkpoint named .zip
    assert not renamed.error and renamed.session_state["ckpt"].startswith("upload:")


# ----------------------------------------------------------------------------- pretrained uploads
def test_a_gguf_upload_opens_on_explore_like_a_checkpoint(runs, tmp_path):
    write_tiny_gguf(tmp_path / "tiny.gguf")
    at = upload(open_page("explore"), "tiny llama.gguf", (tmp_path / "tiny.gguf").read_bytes())
    [folder] = upload_folders(runs)
    assert at.session_state["ckpt"] == f"upload:{folder.name}" and not at.error
    entry = resources.entry(at.session_state["ckpt"]) or catalog.list_entries(at.session_state["_upload_owner"])[0][-1]
    assert entry.pretrained and entry.name == "tiny llama.gguf"
    text = at.text_area(key="text").value
    expected = explain(load_pretrained(tmp_path / "tiny.gguf", use_cache=False), text)
    got = resources.explain_entry(entry, text)
    assert np.allclose(got.attention["decoder"], expected.attention["decoder"], atol=1e-6)  # thread counts differ


def test_a_zipped_bert_folder_upload_opens_on_explore(runs, tmp_path):
    write_tiny_bert(tmp_path / "bert")
    at = upload(open_page("explore"), "tiny-bert.zip", zipped(tmp_path / "bert", prefix="tiny-bert/"))
    [folder] = upload_folders(runs)
    assert at.session_state["ckpt"] == f"upload:{folder.name}" and not at.error
    entry = next(e for e in catalog.list_entries(at.session_state["_upload_owner"])[0] if e.source == "upload")
    text = "the animal was tired"
    expected = explain(load_pretrained(tmp_path / "bert"), text)
    got = resources.explain_entry(entry, text)
    assert np.allclose(got.attention["encoder"], expected.attention["encoder"], atol=1e-6)


def test_a_zip_without_the_bert_files_is_refused_with_the_reason(runs, tmp_path):
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    at = upload(open_page("explore"), "half.zip", zipped(tmp_path / "half"))
    assert "model.safetensors" in at.error[0].value and upload_folders(runs) == []


# ----------------------------------------------------------------------------- the picker (issue 11)
def test_the_picker_lists_the_installed_pretrained_models_with_their_description(runs):
    installed = pretrained_models()
    if not installed:
        pytest.skip("no pretrained package installed")
    at = open_page("explore")
    picker = at.selectbox(key="ckpt")
    for model in installed:
        key = f"pretrained:{model.name}"
        label = f"pretrained · {model.name}"
        assert label in picker.options and picker.format_func(key) == label
    minilm = next((m for m in installed if m.family == "bert"), None)
    if minilm is None:
        return
    picker.select(f"pretrained:{minilm.name}").run()
    assert not at.exception and not at.error
    assert any(t.value == minilm.description for t in at.text)
    text = at.text_area(key="text").value or "the animal was tired"
    expected = explain(load_pretrained(minilm.path), text)
    entry = resources.entry(f"pretrained:{minilm.name}")
    assert np.allclose(resources.explain_entry(entry, text).attention["encoder"], expected.attention["encoder"])


# ----------------------------------------------------------------------------- bad files in runs/ (item 5)
def test_one_bad_file_in_runs_is_skipped_with_a_warning_and_every_page_works(runs):
    (runs / "nested.safetensors").write_bytes(nested_bytes(runs / ".."))
    (runs / "junk.safetensors").write_bytes(b"\x00" * 10)
    (runs / "good.safetensors").write_bytes(REVERSE.read_bytes())
    at = open_page("explore")
    warnings = [w.value for w in at.warning if w.value.startswith("Skipped")]
    assert len(warnings) == 2 and any("nested" in w for w in warnings) and any("junk" in w for w in warnings)
    assert [label for label in at.selectbox(key="ckpt").options if label.startswith("my run · good")]
    for page in ("checkpoints", "lesson"):
        assert not open_page(page).exception


def test_no_link_is_followed_out_of_the_runs_folder(runs, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.safetensors").write_bytes(REVERSE.read_bytes())
    (runs / "linked.safetensors").symlink_to(outside / "secret.safetensors")
    owner = storage.new_owner()
    (runs / catalog.UPLOADS).symlink_to(outside, target_is_directory=True)
    (outside / owner).mkdir()
    entries, problems = catalog.list_entries(owner)
    assert not [e for e in entries if e.source in ("run", "upload")]
    assert any("link" in p for p in problems)
    with pytest.raises(CheckpointError, match="link"):
        catalog.save_upload(owner, "x.safetensors", REVERSE.read_bytes())
    assert list((outside / owner).iterdir()) == []


# ----------------------------------------------------------------------------- nn.Transformer import (issue 16 item 8)
WORDS = ["<pad>", "<bos>", "<eos>", "<unk>", "the", "cat", "sees", "a", "bird"]


def user_translator(folder: Path, **transformer) -> tuple[torch.nn.Module, bytes]:
    """A user's model around a tiny nn.Transformer (no embedding scale, no positional encoding), saved."""
    folder = folder / "mine"  # not in runs/ itself, where the catalog would list (and skip) it
    folder.mkdir(exist_ok=True)
    torch.manual_seed(3)
    user = torch.nn.Module()
    user.src_embed, user.tgt_embed = torch.nn.Embedding(len(WORDS), 16), torch.nn.Embedding(len(WORDS), 16)
    user.transformer = torch.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=2,
                                            dim_feedforward=32, dropout=0.0, batch_first=True, **transformer).eval()
    user.generator = torch.nn.Linear(16, len(WORDS), bias=False)
    save_file(user.state_dict(), folder / "user.safetensors")
    return user, (folder / "user.safetensors").read_bytes()


def fill_import_form(at: AppTest, heads: int | None, vocab: list[str]) -> AppTest:
    if heads is not None:
        at.number_input(key="import_heads").set_value(heads)
    at.radio(key="import_positional").set_value("none")
    at.text_area(key="import_src_vocab").input("\n".join(vocab))
    at.button(key="import_submit").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")
def test_an_nn_transformer_upload_is_imported_with_the_form_and_chosen(runs, tmp_path):
    user, data = user_translator(tmp_path, norm_first=True)
    at = upload(open_page("explore"), "My translator.safetensors", data)
    assert not at.error and upload_folders(runs) == []  # not refused, not kept yet: the form asks first
    assert "d_model 16, 1 encoder and 2 decoder layers, d_ff 32" in at.sidebar.info[0].value
    assert [at.selectbox(key=f"import_{role}").value for role in ("src_embed", "tgt_embed", "lm_head")] == [
        "src_embed.weight", "tgt_embed.weight", "generator.weight"]  # guessed from the names
    at.radio(key="import_norm").set_value("pre")
    fill_import_form(at, None, WORDS)
    assert "say how many attention heads" in at.sidebar.error[0].value and upload_folders(runs) == []
    fill_import_form(at, 4, WORDS)
    assert not at.error
    [folder] = upload_folders(runs)
    assert at.session_state["ckpt"] == f"upload:{folder.name}" and "_import_layout" not in at.session_state
    assert "uploaded · My translator.safetensors" in at.selectbox(key="ckpt").format_func(at.session_state["ckpt"])
    ckpt = load_checkpoint(uploads.payload_of(folder))
    src, tgt = torch.tensor([[4, 5, 6, 7, 8, 2]]), torch.tensor([[1, 4, 5, 6]])
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    with torch.no_grad():  # the user's model, as it computes: its embeddings, nn.Transformer, its output layer
        expected = user.generator(user.transformer(user.src_embed(src), user.tgt_embed(tgt), tgt_mask=causal))
        ours = ckpt.model(src, tgt, return_attention=True)
    torch.testing.assert_close(ours.logits, expected, atol=1e-5, rtol=0)
    shown = explain(ckpt, at.text_area(key="text").value, max_new_tokens=costs.DECODE_TOKENS)
    assert (shown.prediction.text or "(empty)") in outputs(at)  # Explore runs the imported model
    assert not at.warning or all("Skipped" not in w.value for w in at.sidebar.warning)


def test_an_import_that_does_not_fit_is_a_clear_refusal_and_nothing_is_kept(runs, tmp_path):
    _, data = user_translator(tmp_path)
    at = upload(open_page("explore"), "user.safetensors", data)
    fill_import_form(at, 4, WORDS[:-1])
    message = at.sidebar.error[0].value.replace("\\", "")
    assert "cannot be imported" in message and "has 8 lines but the model's source embedding has 9 rows" in message
    fill_import_form(at, 3, WORDS)
    assert "divisible by n_heads (3)" in at.sidebar.error[0].value.replace("\\", "") and upload_folders(runs) == []
    assert outputs(at)  # the page under the sidebar still works


def test_a_safetensors_file_that_is_neither_a_checkpoint_nor_an_nn_transformer_is_refused(runs, tmp_path):
    save_file({"encoder.layers.0.weight": torch.zeros(3, 4)}, tmp_path / "odd.safetensors")
    at = upload(open_page("explore"), "odd.safetensors", (tmp_path / "odd.safetensors").read_bytes())
    assert "bare weights file" in at.sidebar.error[0].value.replace("\\", "") and not at.sidebar.info
    assert upload_folders(runs) == []
