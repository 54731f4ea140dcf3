"""The Train and Checkpoints pages under AppTest, plus their pure chart builders."""

from __future__ import annotations

import shutil
from dataclasses import asdict

import numpy as np
import pytest
import torch
from streamlit.runtime.memory_media_file_storage import _calculate_file_id  # how AppTest names media files
from streamlit.testing.v1 import AppTest

from app.charts import training as charts
from app.resources import registry
from core import KIND_LABELS, explain, load_checkpoint, save_checkpoint, training
from core.lessons import noam_curve, smoothing_example
from core.training.objectives import smoothed_targets
from core.training.snapshots import snapshot_maps
from tests.helpers.apptest_helpers import (as_matrix, canvas_weights, canvases, chart, charts_in, open_page,
                                          panel_matrix, wait_until)
from tests.helpers.paths import REVERSE
from tests.helpers.tiny import build_checkpoint, tiny_model

pytestmark = pytest.mark.usefixtures("runs")  # tests/conftest.py: an empty runs folder, no job left training
weights = as_matrix


def page(name: str, ckpt: str | None = None) -> AppTest:
    return open_page(name, ckpt=ckpt)


def set_tiny_run(at: AppTest, name: str, steps: int) -> None:
    at.selectbox(key="train_task").set_value("copy")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.number_input(key="train_steps").set_value(steps)
    at.number_input(key="train_batch").set_value(16)
    at.text_input(key="train_name").input(name).run()
    assert not at.exception and not at.error


# ----------------------------------------------------------------------------- pure charts
def test_noam_frame_and_peak_are_core_values():
    curve = noam_curve(5000, d_model=64, warmup=400, max_points=100)
    frame = charts.noam_frame(curve)
    assert len(frame) <= 102 and frame["step"].iloc[-1] == 5000 and 400 in set(frame["step"])
    assert np.allclose(frame["lr"], [training.noam_lr(int(s), 64, 400) for s in frame["step"]])
    assert (curve.peak_step, curve.peak_lr) == (400, training.noam_lr(400, 64, 400))
    short = noam_curve(100, 64, 400)
    assert (short.peak_step, short.peak_lr) == (100, training.noam_lr(100, 64, 400))  # still warming up at the end


# ----------------------------------------------------------------------------- train page
def test_teaching_plots_match_core(runs):
    at = page("train")
    at.selectbox(key="train_preset").set_value("small").run()
    at.number_input(key="train_steps").set_value(800)
    at.number_input(key="train_warmup").set_value(200)
    at.slider(key="train_smoothing").set_value(0.3).run()
    assert not at.exception
    d_model = training.PRESETS["small"]["d_model"]
    line, peak = chart(at, "Learning rate")
    assert line["step"].min() == 1 and line["step"].max() == 800
    assert np.allclose(line["lr"], [training.noam_lr(int(s), d_model, 200) for s in line["step"]])
    assert peak["step"].tolist() == [200] and peak["lr"].iloc[0] == pytest.approx(training.noam_lr(200, d_model, 200))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Peak learning rate"] == f"{training.noam_lr(200, d_model, 200):.3e}"
    assert metrics["Reached at step"] == "200"

    example = smoothing_example(0.3)
    expected = smoothed_targets(torch.tensor(example.targets), len(example.vocab), 0.3, pad_id=0)
    (smooth,) = chart(at, "Label-smoothed targets")
    assert np.allclose(weights(smooth, "probability"), expected.numpy())
    table = next(d.value for d in at.dataframe if "0:<pad>" in d.value.columns)
    assert np.allclose(table.to_numpy(), expected.numpy())

    at.number_input(key="train_d_model").set_value(128)  # the advanced width moves the curve
    at.number_input(key="train_warmup").set_value(50).run()
    line, _ = chart(at, "Learning rate")
    assert np.allclose(line["lr"], [training.noam_lr(int(s), 128, 50) for s in line["step"]])


def test_a_shared_link_restores_settings_and_ignores_nonsense(runs):
    at = open_page("train", query={"train_task": "sort", "train_steps": "1234", "train_smoothing": "7",
                                   "train_preset": "enormous", "train_batch": "abc"})
    assert not at.error
    assert at.selectbox(key="train_task").value == "sort"
    assert at.number_input(key="train_steps").value == 1234
    assert at.slider(key="train_smoothing").value == 0.9  # clamped into range
    assert at.selectbox(key="train_preset").value == "small"  # unknown preset: the default
    assert at.number_input(key="train_batch").value == 32


def test_bad_settings_are_explained_and_training_is_disabled(runs):
    at = page("train")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.number_input(key="train_heads").set_value(3).run()  # d_model 32 is not divisible by 3
    assert not at.exception
    assert any("divisible" in e.value for e in at.error)
    assert at.button(key="train_start").disabled
    at.text_input(key="train_name").input("../../etc").run()
    at.number_input(key="train_heads").set_value(2).run()
    assert not at.error and not at.button(key="train_start").disabled
    assert "runs/etc.safetensors" in " ".join(c.value for c in at.caption)  # sanitised, never a path


def test_train_page_end_to_end(runs):
    at = page("train")
    set_tiny_run(at, "e2e", steps=10)
    assert "--task=copy" in at.code[0].value and "--preset=tiny" in at.code[0].value
    assert at.code[1].value.startswith("torchrun --nproc_per_node=")
    assert "--device" not in at.code[1].value  # each torchrun process takes its own GPU, never --device=cpu
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error
    assert registry().get("e2e") is not None
    wait_until(at, lambda a: any("Finished" in s.value for s in a.success))

    titles = list(charts_in(at))
    assert any(t.startswith("Training loss") for t in titles)
    assert any(t.startswith("Validation") for t in titles)
    (live_map, _), = canvases(at)  # the probe's maps, from the last snapshot
    job = registry().get("e2e").view()
    lines = charts_in(at)["Learning rate"]  # the live rate beside the loss (planned = so far: one dataset)
    (now,) = [f for f in lines if len(f) == 1]
    assert int(now["step"].iloc[0]) == job.steps[-1] and np.isclose(now["lr"].iloc[0], job.lrs[-1])
    assert all(np.allclose(f["lr"], job.lrs) for f in lines if len(f) == 10)
    (rate,) = [m for m in at.metric if m.label == "Learning rate"]
    assert rate.value == f"{job.lrs[-1]:.2e}"
    assert job.snapshot_step == 10 and live_map["title"] == f"{KIND_LABELS['cross']} · step 10"
    assert np.allclose(canvas_weights(at, 0, 0), job.snapshot["cross"][0, 0], atol=1e-3)
    assert live_map["cols"] == [f"{i}:{t}" for i, t in enumerate(job.source_tokens)]
    assert (runs / "e2e.safetensors").exists()
    load_checkpoint(runs / "e2e.safetensors")

    picker = at.selectbox(key="ckpt")
    assert any("e2e" in option for option in picker.options)
    assert at.text_input(key="train_name").value != "e2e"  # a fresh name for the next run
    at.button(key="train_explore").click().run()  # opens the Explore page on the new run
    assert not at.exception
    assert at.session_state["ckpt"] == "run:e2e"
    assert "Train a Transformer" not in [t.value for t in at.title]


def test_stop_from_the_page_keeps_a_usable_checkpoint(runs):
    at = page("train")
    set_tiny_run(at, "stopme", steps=5000)
    at.button(key="train_start").click().run()
    wait_until(at, lambda a: registry().get("stopme").view().step >= 2)
    at.run()
    assert len(at.get("progress")) == 1
    assert at.button(key="train_start").disabled  # one training job at a time
    assert any("one model at a time" in i.value for i in at.info)
    at.button(key="train_stop").click().run()
    wait_until(at, lambda a: any("Stopped at step" in i.value for i in a.info))
    view = registry().get("stopme").view()
    assert view.status == "stopped" and view.step < 5000
    ckpt = load_checkpoint(runs / "stopme.safetensors")
    assert ckpt.info.extra["history"][-1]["step"] == view.step


def test_a_crashed_job_shows_its_message_not_a_traceback(runs):
    config = training.TrainConfig(task="copy", preset="tiny", d_model=30, n_heads=4, train_size=300, progress=False,
                         out=str(runs / "broken.safetensors"))  # d_model 30 is not divisible by 4 heads
    registry().start("broken", config).join(timeout=120)
    at = page("train")
    errors = [e.value for e in at.error]
    assert any(e.startswith("Training failed:") and "divisible by n_heads" in e for e in errors)
    assert not any("Traceback" in e for e in errors)
    assert at.button(key="train_explore").disabled  # nothing to explore


# ----------------------------------------------------------------------------- checkpoints page
def test_checkpoints_page_describes_a_shipped_checkpoint(runs):
    at = page("checkpoints", "shipped:reverse")
    expected = load_checkpoint(REVERSE)
    frames = {tuple(d.value.columns): d.value for d in at.dataframe}
    config = frames[("setting", "value")]
    assert dict(zip(config["setting"], config["value"])) == {k: str(v) for k, v in asdict(expected.config).items()}
    params = frames[("block", "parameters", "share")]
    assert dict(zip(params["block"], params["parameters"])) == expected.model.parameter_counts()
    bars = chart(at, "Parameters per block")[0]
    assert dict(zip(bars["block"], bars["parameters"])) == expected.model.parameter_counts()
    metrics = frames[("split", "metric", "value")]
    assert metrics[metrics["split"] == "test"]["value"].tolist() == list(expected.info.metrics["test"].values())
    assert expected.info.extra["train"]["command"] in [c.value for c in at.code]
    history = chart(at, "Validation")[0]
    assert sorted(set(history["step"])) == [r["step"] for r in expected.info.extra["history"]]
    assert not [b for b in at.button if b.key in ("ckpt_delete", "ckpt_delete_confirm")]
    assert any("cannot be deleted" in c.value for c in at.caption)


def test_timeline_replays_the_snapshots(runs):
    at = page("checkpoints", "shipped:reverse")
    ckpt = load_checkpoint(REVERSE)
    steps = ckpt.info.extra["snapshots"]["steps"]
    slider = at.select_slider(key="tl_step")
    assert list(slider.options) == [str(s) for s in steps] and slider.value == steps[0]
    at.selectbox(key="tl_kind").set_value("cross").run()
    header = next(h for h, _ in canvases(at) if h["mode"] == "maps")  # every head of the step: picked in the browser
    assert header["title"] == f"{KIND_LABELS['cross']} · step {steps[0]:,}" and header["kind"] == "cross"
    first = snapshot_maps(ckpt.extra_tensors, steps[0])["cross"]  # (L, H, Tq, Tk)
    for layer, head in np.ndindex(*first.shape[:2]):
        assert np.allclose(canvas_weights(at, layer, head), first[layer, head], atol=1e-3)  # float16 on the wire
    at.select_slider(key="tl_step").set_value(steps[-1]).run()
    last = snapshot_maps(ckpt.extra_tensors, steps[-1])["cross"]
    assert np.allclose(canvas_weights(at, 1, 2), last[1, 2], atol=1e-3)
    assert not np.allclose(first, last, atol=0.01)  # attention formed during training

    at.button(key="tl_play").click().run()  # at the end, play restarts from random initialisation
    assert at.select_slider(key="tl_step").value == steps[0]
    at.run()  # each tick of the playing fragment shows the next snapshot
    assert at.select_slider(key="tl_step").value == steps[1]
    at.run()
    assert at.select_slider(key="tl_step").value == steps[2]
    at.button(key="tl_play").click().run()  # pause
    at.run()
    assert at.select_slider(key="tl_step").value == steps[2]


def test_side_by_side_snapshots_and_checkpoints(runs, char_tokenizer):
    build_checkpoint(runs / "random.safetensors", "encoder-decoder", char_tokenizer)
    at = page("checkpoints", "shipped:reverse")
    ckpt = load_checkpoint(REVERSE)
    steps = ckpt.info.extra["snapshots"]["steps"]
    assert at.radio(key="sbs_mode").value == "snapshots"
    at.selectbox(key="sbs_kind").set_value("encoder").run()
    assert at.select_slider(key="sbs_step_a").value == steps[0]
    diff = panel_matrix(at, "Difference")  # the canvas's difference panel (float16)
    maps_a, maps_b = (snapshot_maps(ckpt.extra_tensors, s)["encoder"][0, 0] for s in (steps[0], steps[-1]))
    assert np.allclose(diff, maps_b - maps_a, atol=1e-3) and np.abs(diff).max() > 0

    at.radio(key="sbs_mode").set_value("checkpoints").run()
    at.selectbox(key="sbs_other").set_value("run:random")
    at.text_area(key="sbs_text").input("abcd").run()
    at.selectbox(key="sbs_kind").set_value("encoder").run()
    assert not at.exception
    diff = panel_matrix(at, "Difference")
    ours = explain(ckpt, "abcd").attention["encoder"][0, 0]
    theirs = explain(load_checkpoint(runs / "random.safetensors"), "abcd").attention["encoder"][0, 0]
    assert np.allclose(diff, theirs - ours, atol=1e-3) and np.abs(diff).max() > 0


def test_download_and_delete_a_run(runs):
    shutil.copy(REVERSE, runs / "mine.safetensors")
    at = page("checkpoints", "run:mine")
    download = next(d for d in at.get("download_button") if d.key == "ckpt_download")
    file_id = _calculate_file_id((runs / "mine.safetensors").read_bytes(), "application/octet-stream",
                                 "mine.safetensors")
    assert download.proto.url.endswith(f"{file_id}.bin")

    at.button(key="ckpt_delete").click().run()
    assert (runs / "mine.safetensors").exists() and any("cannot be undone" in w.value for w in at.warning)
    at.button(key="ckpt_delete_cancel").click().run()
    assert (runs / "mine.safetensors").exists() and not at.warning
    at.button(key="ckpt_delete").click().run()
    at.button(key="ckpt_delete_confirm").click().run()
    assert not at.exception
    assert not (runs / "mine.safetensors").exists()
    assert any("Deleted" in s.value for s in at.success)
    assert at.session_state["ckpt"] != "run:mine"
    assert not any("mine" in option for option in at.selectbox(key="ckpt").options)


def test_a_checkpoint_without_history_or_snapshots_is_explained(runs, char_tokenizer):
    build_checkpoint(runs / "bare.safetensors", "decoder", char_tokenizer)
    at = page("checkpoints", "run:bare")
    assert not at.exception
    infos = " ".join(i.value for i in at.info)
    assert "no training history" in infos and "no attention snapshots" in infos
    assert not [s for s in at.select_slider if s.key == "tl_step"]
    assert at.radio(key="sbs_mode").value == "checkpoints"
    assert [b for b in at.button if b.key == "ckpt_delete"]  # a run can be deleted


def test_a_checkpoint_with_a_malformed_record_still_opens(runs, char_tokenizer):
    odd = {"history": "oops", "snapshots": {"steps": "all of them"}, "train": {"command": 5}, "labels": 3}
    save_checkpoint(runs / "odd.safetensors", tiny_model("encoder-decoder", vocab=char_tokenizer.vocab_size),
                    {"source": char_tokenizer, "target": char_tokenizer}, task="[mystery](javascript:alert(1))", extra=odd)
    at = page("checkpoints", "run:odd")
    assert not at.exception
    assert any("no attention snapshots" in i.value for i in at.info)
    assert any("`[mystery](javascript:alert(1))`" in m.value for m in at.markdown)  # shown as code, not a link
    assert not at.error  # each odd field is treated as missing
    assert any("no training history" in i.value for i in at.info)
    assert [d for d in at.get("download_button") if d.key == "ckpt_download"]
    assert [b for b in at.button if b.key == "ckpt_delete"]


def test_the_timeline_grids_each_heads_distance_from_the_final_model(runs):
    """The grid under the timeline's map: per head, the Jensen–Shannon divergence of its snapshot from the final
    model's (core.head_types.map_divergence), zero at the last step."""
    from core import head_types
    from tests.helpers.apptest_helpers import plotly_array, spec

    def grid(at) -> np.ndarray:
        found = [spec(e) for e in at.get("plotly_chart") if "distance from the final" in
                 spec(e)["layout"]["title"]["text"]]
        assert found, "no distance grid under the timeline"
        return plotly_array(found[0]["data"][0]["z"]).astype(float)

    at = page("checkpoints", "shipped:reverse")
    ckpt = load_checkpoint(REVERSE)
    steps = ckpt.info.extra["snapshots"]["steps"]
    at.selectbox(key="tl_kind").set_value("cross").run()
    first, last = (snapshot_maps(ckpt.extra_tensors, s)["cross"] for s in (steps[0], steps[-1]))
    np.testing.assert_allclose(grid(at), head_types.map_divergence(first, last), atol=1e-6)
    assert grid(at).max() > 0.05  # the random start differs from the trained model
    at.select_slider(key="tl_step").set_value(steps[-1]).run()
    np.testing.assert_allclose(grid(at), 0.0, atol=1e-9)
