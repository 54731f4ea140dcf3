"""Following the teacher, for every page at once: the teacher's session publishes its screen, a student's applies it.

The screen is the page's URL path and its share link (``st.query_params``: what each page writes with
``widgets.write_to_url``, by design the state that may be shown to anyone), less :data:`PERSONAL` parameters and a
model only the teacher's session can open (an upload). So no page knows about classes: whatever a page puts in its
share link (the Lesson's stage, sentence and head; Explore's text, kind, layer and head; a section opened), the class
follows.

* **Publishing** (the teacher's session only: it holds the class's teacher key, which no link carries): at the end
  of every full run (:func:`run_finished`, from ``app/streamlit_app.py``) and, in a fragment's own run, when the
  fragment writes its share link (:func:`url_written`, from ``widgets.write_to_url``). An unchanged screen is not
  written again.
* **Applying** (a following student, :func:`follow`, first thing in the sidebar, before any widget is drawn): when
  the class's screen version passed the one this session applied, the share-link keys of the student's old and new
  screens are dropped from its session state, the pages' "restored from the link" marks are cleared, and the
  teacher's parameters become the URL; then the page, on this run or after ``st.switch_page`` to the teacher's page,
  reads them through its own parsers, with its own checks (``widgets.restore_from_url``).

* **In the page's fragment** (:func:`fragment_started`, first thing in a ``widgets.page_fragment`` run): the
  pusher reruns a following student's page fragment alone when the teacher's screen moved (a fragment run skips the
  sidebar, the class banner and the page's top); when the teacher is on the same page and changed only parameters
  that this fragment writes (:func:`url_written` records them), the screen is applied there and the page's own
  parsers read it again (``widgets.restore_again``); otherwise the fragment asks for a full run, which applies it as
  above.

A student's URL parameters never reach the class, whatever they say: a student's session has no teacher key.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

from app import routes
from app.services import catalog, classroom
from app.services.classroom import ClassError, ClassStore, Versions

log = logging.getLogger(__name__)

CLASS_PARAM = "class"  # the students' link: ?class=<code>
PERSONAL = frozenset({"projector", "all_sections", CLASS_PARAM})  # each screen's own: never followed
TEACHER = "_class_teacher"  # {"code", "key"}: this session teaches the class
MEMBER = "_class_member"  # {"code", "member", "following", "applied", "keys"}: this session follows a class
PROBLEM = "_class_problem"  # a line to show once: the link was wrong, the class ended or is full
PAGE = "_class_page"  # the URL path of the page this run draws
PUBLISHED = "_class_published"  # (screen, when) last published by this teacher
OWNED = "_class_owned"  # {fragment id: the share-link parameters it writes}: what a fragment run may apply
RESTORED_PREFIX = "_restored_"  # widgets.restore_from_url's once-per-visit marks
TOUCH_S = 60.0  # an unchanged screen is written again this often (the class's "last teacher action")


def store() -> ClassStore:
    """The class store in this server's data folder."""
    return classroom.store_at(catalog.runs_dir())


def teacher() -> dict[str, str] | None:
    return st.session_state.get(TEACHER)


def member() -> dict[str, Any] | None:
    return st.session_state.get(MEMBER)


def script_of(url_path: str) -> str:
    """The page script served at ``url_path`` (Explore for the default page's paths)."""
    found = next((r.script for pages in routes.SECTIONS.values() for r in pages if r.url_path == url_path), None)
    return found or routes.EXPLORE


def shared_params() -> dict[str, str]:
    """This session's share link as the class sees it: its parameters less :data:`PERSONAL` ones and a model the
    class cannot open (this session's upload)."""
    return {k: v for k, v in st.query_params.to_dict().items()
            if k not in PERSONAL and not (k == "ckpt" and v.startswith("upload:"))}


# ----------------------------------------------------------------------------- the teacher's side
def publish(page: str | None = None) -> None:
    """Publish this teacher's screen (``page``: its URL path, else this run's) unless it is unchanged."""
    held = teacher()
    if held is None:
        return
    page = st.session_state.get(PAGE, "") if page is None else page
    screen, now = (page, tuple(sorted(shared_params().items()))), time.time()
    last = st.session_state.get(PUBLISHED)
    if last is not None and last[0] == screen and now - last[1] < TOUCH_S:
        return
    try:
        store().publish(held["code"], held["key"], page, dict(screen[1]), now)
    except ClassError as error:  # the class ended (another tab, 4 idle hours): this session teaches no more
        st.session_state.pop(TEACHER, None)
        st.session_state[PROBLEM] = str(error)
        return
    st.session_state[PUBLISHED] = (screen, now)


def url_written(params: list[str]) -> None:
    """A page wrote the share-link parameters ``params``: a teacher's fragment run publishes now (a full run
    publishes at its end, once the whole page has written its link); in a following student's fragment, the
    fragment and what it writes are remembered, so that the teacher's next screen reruns that fragment alone."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    if teacher() is not None and ctx.fragment_ids_this_run:
        publish()
    held, fragment = member(), ThreadState.get().fragment_id  # Streamlit below its API, as classroom.py
    if held is None or not fragment:
        return
    owned = st.session_state.setdefault(OWNED, {})
    if not set(params) <= owned.get(fragment, set()):
        owned[fragment] = owned.get(fragment, set()) | set(params)
    classroom_push().page_fragment(ctx.session_id, fragment)


def classroom_push():
    """This process's class pusher (imported here: the pusher imports Streamlit's runtime)."""
    from app.ui import class_push

    return class_push.pusher(store())


def run_finished(page: str) -> None:
    """A full run of the page at URL path ``page`` finished: publish the teacher's screen."""
    publish(page)


# ----------------------------------------------------------------------------- the students' side
def join(code: str) -> None:
    """Join the class ``code`` as an anonymous student (a fresh member token), following; a wrong, ended or full
    class leaves one line to show (:data:`PROBLEM`)."""
    token = secrets.token_hex(16)
    try:
        store().join(code, token)
    except ClassError as error:
        st.session_state[PROBLEM] = str(error)
        return
    st.session_state[MEMBER] = {"code": code, "member": token, "following": True, "applied": -1, "keys": []}


def set_following(following: bool) -> None:
    """Detach from the teacher ("Explore on my own") or rejoin ("Catch up": the teacher's screen at the next run)."""
    held = member()
    if held is None:
        return
    held["following"] = following
    if following:
        held["applied"] = -1
    store().follow(held["code"], held["member"], following)


def leave() -> None:
    """Leave the class this session follows."""
    held = st.session_state.pop(MEMBER, None)
    if held is not None:
        store().leave([(held["code"], held["member"])])


def follow(page: str) -> None:
    """First thing in a run (``page``: the URL path it draws): join the class a ``?class=`` link names, and, for
    a following student, apply the teacher's screen when it moved (may switch page: a rerun)."""
    st.session_state[PAGE] = page
    code = st.query_params.get(CLASS_PARAM)
    held = member()
    if code is not None and teacher() is None and (held is None or held["code"] != code):
        if held is not None:
            leave()
        join(code)
        held = member()
        if held is None:
            st.query_params.pop(CLASS_PARAM, None)
    if held is None:
        return
    found = store().versions([held["code"]]).get(held["code"])
    if found is None or found.ended:
        st.session_state.pop(MEMBER, None)
        st.session_state[PROBLEM] = "This class has ended. Your teacher can start a new one and give you its link."
        st.query_params.pop(CLASS_PARAM, None)
        return
    if st.query_params.get(CLASS_PARAM) != held["code"]:
        st.query_params[CLASS_PARAM] = held["code"]
    if held["following"] and found.version != held["applied"]:
        _apply(held, page)


def _apply(held: dict[str, Any], page: str) -> None:
    """Make the teacher's screen this session's (see the module doc); switches page when the teacher is on
    another one."""
    screen = store().screen(held["code"])
    personal = {k: v for k, v in st.query_params.to_dict().items() if k in PERSONAL}
    for key in (set(st.query_params.keys()) | set(held["keys"]) | set(screen.params)) - PERSONAL:
        st.session_state.pop(key, None)
    for key in [k for k in st.session_state if str(k).startswith(RESTORED_PREFIX)]:
        del st.session_state[key]
    held.update(applied=screen.version, keys=sorted(screen.params))
    params = {**screen.params, **personal}
    if screen.page and script_of(screen.page) != script_of(page):
        st.switch_page(script_of(screen.page), query_params=params)
    st.query_params.from_dict(params)


def fragment_started() -> bool:
    """First thing in a page fragment's run (see the module doc): apply the teacher's new screen when this
    fragment can draw it, else ask for a full run. Returns whether a screen was applied here."""
    ctx, held = get_script_run_ctx(), member()
    if ctx is None or not ctx.fragment_ids_this_run or held is None or not held["following"]:
        return False  # a full run: the sidebar's follow() has applied it
    found = store().versions([held["code"]]).get(held["code"])
    if found is not None and not found.ended and found.version == held["applied"]:
        return False
    page = st.session_state.get(PAGE, "")
    screen = None if found is None or found.ended else store().screen(held["code"])
    owned = (st.session_state.get(OWNED) or {}).get(ThreadState.get().fragment_id, set())
    changed = set() if screen is None else _changed(screen)
    if screen is None or script_of(screen.page or page) != script_of(page) or not changed <= owned:
        log.info("class %s: a full run applies the screen (page %s → %s, changed %s, the fragment writes %s)",
                 held["code"][:6], page, screen and screen.page, sorted(changed), sorted(owned))
        st.rerun(scope="app")  # another page, a parameter outside this fragment, or the class ended
    marks = [k for k in st.session_state if str(k).startswith(RESTORED_PREFIX)]
    _apply(held, page)
    from app.ui import widgets

    widgets.restore_again(set(screen.params))  # this page's parsers read the new link; other pages' marks stay
    for mark in marks:
        st.session_state.setdefault(mark, True)
    return True


def _changed(screen) -> set[str]:
    """The share-link parameters that differ between this session's URL and the teacher's ``screen``."""
    mine = shared_params()
    return {k for k in set(mine) | set(screen.params) if mine.get(k) != screen.params.get(k)}


def drawn_versions(read: Versions) -> Versions:
    """What this session has drawn of its class, given the versions it just ``read``: a student's screen is the
    one it applied (a fragment's run applies nothing)."""
    held = member()
    if held is None:
        return read
    return Versions(held["applied"] if held["following"] else read.version, read.poll_version, read.tally,
                    read.ended)
