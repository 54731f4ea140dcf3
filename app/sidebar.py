"""The shared sidebar: the language picker (:mod:`app.ui.language`), the checkpoint picker (shipped, runs, pretrained, this session's uploads), an
upload, projector mode, whether the Learn pages open every section, and teaching a class (a class's student
follows the teacher's screen before anything is drawn: :func:`app.ui.class_follow.follow`; the class's badge and
question open the page: :func:`app.ui.classroom.banner`).

A new upload is chosen through a pending key (``_ckpt_pending``) applied before the picker exists:
Streamlit forbids setting a widget's value after the widget has been drawn in a run.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.uploaded_file_manager import UploadedFile

from app.services import catalog
from app.ui import class_follow, classroom, language, presentation, widgets
from app import resources
from app.ui.import_form import import_form
from app.services import uploads
from app.services.uploads import NeedsImport
from core import CheckpointError, device


def _chosen(key: str) -> None:
    """Select the new upload ``key`` (on the next run, before the picker is drawn)."""
    st.session_state.pop("_upload_error", None)
    st.session_state.pop("_import_layout", None)
    resources.entries.clear()
    st.session_state["_ckpt_pending"] = key
    st.rerun()


def uploader_key() -> str:
    """The uploader's widget key: a new one after every saved or refused upload, so the widget starts empty."""
    rounds = st.session_state.get("_upload_round", 0)
    return "upload" if rounds == 0 else f"upload_{rounds}"


def _release(uploaded: UploadedFile) -> None:
    """Drop an upload's bytes from Streamlit's memory once they are on disk or refused (the uploader would
    otherwise hold up to the upload cap per session until the session ends), and empty the uploader."""
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.uploaded_file_mgr is not None:
        ctx.uploaded_file_mgr.remove_file(ctx.session_id, uploaded.file_id)
    st.session_state["_upload_round"] = st.session_state.get("_upload_round", 0) + 1


SPEECH_LESSON_PAGE = "lesson"  # the page (URL path) whose picker also lists the installed speech models
UPLOAD_BOX = "model_upload"  # the container of the model uploader (its limit's text is rewritten in it)


def limit_css(box: str, megabytes: int) -> str:
    """The style that writes "``megabytes`` MB per file" in the drop zone of the uploader in the container keyed
    ``box``: Streamlit's own text rounds a limit over 512 MB to whole gigabytes (600 MB reads "1GB per file")."""
    zone = f'.st-key-{box} [data-testid="stFileUploaderDropzoneInstructions"] span'
    return (f"<style>{zone} {{ font-size: 0 !important; }} {zone}::after {{ content: \"{megabytes} MB per file\"; "
            "font-size: 0.875rem; }</style>")


def _upload() -> None:
    megabytes = uploads.max_upload_bytes() >> 20
    t = language.words("sidebar")
    with st.expander(t("upload.expander")), st.container(key=UPLOAD_BOX):
        st.html(limit_css(UPLOAD_BOX, megabytes))
        uploaded = st.file_uploader(t("upload.label", megabytes=megabytes), key=uploader_key(),
                                    help=t("upload.help"))
        if uploaded is None:
            st.session_state.pop("_import_layout", None)
        if uploaded is not None and st.session_state.get("_uploaded_id") != uploaded.file_id:
            st.session_state["_uploaded_id"] = uploaded.file_id
            st.session_state.pop("_import_layout", None)
            st.session_state.pop("_upload_error", None)
            try:
                key = resources.save_upload(uploaded.name, uploaded.getvalue())
            except NeedsImport as needed:  # an nn.Transformer state dict: the form below asks for the rest
                st.session_state["_import_layout"] = needed.layout
            except (CheckpointError, ValueError) as error:  # refused, or the gate's "busy" (OverBudget)
                st.session_state["_upload_error"] = str(error)
                _release(uploaded)
                st.rerun()
            else:
                _release(uploaded)
                _chosen(key)
        if uploaded is not None and st.session_state.get("_import_layout") is not None:
            key = import_form(st.session_state["_import_layout"], uploaded.name, uploaded.getvalue())
            if key is not None:
                _release(uploaded)
                _chosen(key)
        if st.session_state.get("_upload_error"):
            st.error(t("upload.refused", error=widgets.plain(st.session_state["_upload_error"])))


def compute_note() -> str:
    """Where this server computes: training on its GPU when it has one; maps always on the CPU, where
    models of this size answer sooner (``python -m bench gpu`` measures both)."""
    gpu, t = device.gpu_name(), language.words("sidebar")
    return t("compute.no_gpu") if gpu is None else t("compute.gpu", gpu=gpu)


def sidebar(page: str = "") -> None:
    """Draw the sidebar of the page at URL path ``page``; the choice lives in ``st.session_state["ckpt"]`` and the
    share link."""
    class_follow.follow(page)  # a following student takes the teacher's page and share link (may switch page)
    if language.current() in language.CJK:  # the fonts first: before any chart is drawn and fitted to the screen
        st.html(language.style())
    widgets.restore_from_url({"ckpt": str, "projector": widgets.parse_bool,
                              presentation.ALL_SECTIONS: widgets.parse_bool})
    if "_ckpt_pending" in st.session_state:  # a new upload: chosen before the picker is drawn
        st.session_state["ckpt"] = st.session_state.pop("_ckpt_pending")
    all_entries, problems = resources.entries()
    if page == SPEECH_LESSON_PAGE:  # the Lesson follows Whisper too (its own track): the installed ones listed
        all_entries = all_entries + resources.speech_lesson_entries()
    keys = [e.key for e in all_entries]
    if st.session_state.get("ckpt") not in keys:
        st.session_state["ckpt"] = catalog.DEFAULT_KEY if catalog.DEFAULT_KEY in keys else (keys or [None])[0]
    widgets.link_checked("ckpt", st.session_state["ckpt"])  # a link to a model this session does not list
    t = language.words("sidebar")
    with st.sidebar:
        language.picker()
        st.subheader(t("checkpoint.header"))
        if keys:
            labels = {e.key: e.label for e in all_entries}
            st.selectbox(t("checkpoint.model"), keys, key="ckpt", format_func=labels.get,
                         help=t("checkpoint.model_help"))
            current = next((e for e in all_entries if e.key == st.session_state["ckpt"]), None)
            if current is not None:
                st.text(current.description)  # may quote a task name read from an uploaded file
        else:
            st.warning(t("checkpoint.none_found"))
        _upload()
        for problem in problems:  # file names are user data: escaped
            st.warning(t("checkpoint.skipped", problem=widgets.plain(problem)), icon=":material/warning:")
        st.divider()
        st.toggle(t("modes.presentation"), key=presentation.KEY, help=t("modes.presentation_help"))
        st.toggle(t("modes.every_section"), key=presentation.ALL_SECTIONS, help=t("modes.every_section_help"))
        st.caption(t("modes.theme"))
        st.caption(compute_note())
        st.divider()
        classroom.panel()
    presentation.apply(page)
    classroom.banner()
    widgets.write_to_url(["ckpt", "projector", presentation.ALL_SECTIONS])
