"""Teaching a class: the sidebar's class panel, the projector's class banner and a student's.

* **The sidebar** (:func:`panel`): "Start a class" (or take one back with its teacher key); then the students' link
  and its QR code, "Ask the class" (2–6 choices, or a sentence's words to click), the answers as CSV and "End the
  class". A student sees the class it follows and "Leave the class".
* **The top of the page** (:func:`banner`, drawn before the page): a badge fixed in the app's header row, so the
  page's layout does not move (the teacher's: how many students follow, and the join code; a student's: following
  or on its own, with "Explore on my own" / "Catch up"); below it, the question of the moment (the teacher's live
  bar chart with Reveal and Close; a student's answer buttons, then the right answer and the counts once revealed),
  and once, a line when a class link was wrong, ended or full. Each is a fragment that the class's pusher reruns
  alone (:mod:`app.ui.class_push`); following the teacher is :mod:`app.ui.class_follow`.

The teacher key is shown only in the sidebar, under its own expander (the sidebar is folded away on a projector).
"""

from __future__ import annotations

import html
from urllib.parse import urlsplit

import segno
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

from app.charts import classroom as charts
from app.services import class_polls
from app.services.class_polls import ClassError
from app.ui import class_follow as follow
from app.ui import class_push, vega, widgets

SHOW_JOIN = "_class_show_join"  # the teacher's banner shows the join code
ANSWER_NOTE = "_class_answer_note"  # a student's refused answer, said once
BADGE_CSS = """<style>
[data-testid="stElementContainer"]:has(> .st-key-class_badge), [data-testid="stLayoutWrapper"]:has(> .st-key-class_badge) { position: fixed; top: 0.45rem; right: 4.25rem; z-index: 999991; width: auto !important; }
.st-key-class_badge { flex-direction: row; align-items: center; gap: 0.6rem; width: auto; padding: 0.1rem 0.6rem;
  border-radius: 1.2rem; background: var(--attnscope-background, #fff); box-shadow: 0 0 0 1px rgba(49, 51, 63, 0.2); }
.st-key-class_badge p { margin: 0; white-space: nowrap; }
.st-key-class_badge button { min-height: 2rem; padding: 0 0.6rem; }
.st-key-class_join img { width: min(100%, 22rem); image-rendering: pixelated; }
</style>"""


def join_link(code: str) -> str:
    """The students' link to the class ``code``, on the address this browser reached the server by."""
    base = urlsplit(st.context.url or "http://localhost:8501/")
    root = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{base.scheme}://{base.netloc}/{root + '/' if root else ''}?{follow.CLASS_PARAM}={code}"


def qr_image(link: str, label: str) -> str:
    """The link's QR code as an <img> (an SVG data URI drawn on the server: no script, nothing fetched)."""
    uri = segno.make(link, error="m").svg_data_uri(scale=10, border=2, dark="#000", light="#fff")
    return f'<img src="{html.escape(uri)}" alt="{html.escape(label)}">'


def _fragment_id() -> str | None:
    """The id of the fragment running now (Streamlit below its public API: ``ThreadState``), for the pusher."""
    return ThreadState.get().fragment_id


def _session_id() -> str | None:
    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def _try(action, *args) -> bool:
    """Run a class action; its refusal becomes one line on the page. Returns whether it went through."""
    try:
        action(*args)
    except ClassError as error:
        st.session_state[follow.PROBLEM] = str(error)
        return False
    return True


# ----------------------------------------------------------------------------- the sidebar
def panel() -> None:
    """The sidebar's class section."""
    held, mine = follow.teacher(), follow.member()
    if held is not None:
        _teacher_panel(held)
    elif mine is not None:
        st.subheader("Class")
        st.caption("You are in a class: " + ("your screen follows the teacher's." if mine["following"] else
                                             "you are exploring on your own."))
        st.button("Leave the class", key="class_leave", on_click=follow.leave, icon=":material/logout:")
    else:
        with st.expander("Teach a class", icon=":material/co_present:"):
            st.caption("Students open a link on their own laptops; their screens follow yours (page, stage, "
                       "sentence, model, layer and head) and answer your questions. Up to 300 students; a class "
                       "ends when you end it or after 4 hours without your action.")
            st.button("Start a class", key="class_start", on_click=_start, type="primary")
            st.text_input("Teacher key of a class you started (to take it back after closing its tab)",
                          key="class_resume_key", type="password", max_chars=40)
            st.button("Take the class back", key="class_resume", on_click=_resume)


def _start() -> None:
    started = follow.store().start()
    st.session_state[follow.TEACHER] = {"code": started.code, "key": started.teacher_key}
    st.session_state[SHOW_JOIN] = True
    follow.leave()


def _resume() -> None:
    key = str(st.session_state.get("class_resume_key") or "")
    try:
        code = follow.store().resume(key)
    except ClassError as error:
        st.session_state[follow.PROBLEM] = str(error)
        return
    st.session_state[follow.TEACHER] = {"code": code, "key": key.strip()}
    st.session_state["class_resume_key"] = ""
    follow.leave()


def _end(held: dict[str, str]) -> None:
    if _try(follow.store().end, held["code"], held["key"]):
        st.session_state.pop(follow.TEACHER, None)


def _teacher_panel(held: dict[str, str]) -> None:
    st.subheader("Your class")
    link = join_link(held["code"])
    st.caption("The students' link (the QR code on the page says the same):")
    st.text(link)
    if str(st.session_state.get("ckpt") or "").startswith("upload:"):
        st.caption("Your uploaded model stays in your session: the students see the shipped model instead.")
    _ask_form(held)
    st.download_button("Answers as CSV", data=lambda: class_polls.answers_csv(follow.store(), held["code"],
                                                                             held["key"]),
                       file_name="class-answers.csv", mime="text/csv", key="class_csv", icon=":material/download:")
    with st.expander("Your teacher key (keep it private)", icon=":material/key:"):
        st.caption("With it you can take the class back from another tab or after a reload. It is in no link.")
        st.text(held["key"])
    st.button("End the class", key="class_end", on_click=_end, args=(held,), icon=":material/stop_circle:")


def _ask_form(held: dict[str, str]) -> None:
    with st.expander("Ask the class", icon=":material/quiz:"):
        with st.form("class_ask", clear_on_submit=False, border=False):
            st.text_input("Question", key="class_q_text", max_chars=class_polls.MAX_QUESTION)
            st.radio("Answers", ["Choices", "Click a token"], key="class_q_kind", horizontal=True)
            st.text_area("Choices, one per line (2 to 6)", key="class_q_choices", height=110)
            st.text_input("Or the sentence whose words are the tokens to click", key="class_q_sentence",
                          max_chars=300)
            st.text_input("Right answer (optional): a choice or a token, as written", key="class_q_right",
                          max_chars=class_polls.MAX_OPTION)
            st.text_input("Why (optional, shown with the answer)", key="class_q_why", max_chars=class_polls.MAX_WHY)
            st.form_submit_button("Ask the class", on_click=_ask, args=(held,), type="primary")


def _ask(held: dict[str, str]) -> None:
    s = st.session_state
    tokens = s.get("class_q_kind") == "Click a token"
    question = {"text": s.get("class_q_text", ""), "why": s.get("class_q_why", ""),
                "answer": s.get("class_q_right", "").strip() or None,
                "tokens" if tokens else "choices": (s.get("class_q_sentence", "").split() if tokens else
                                                    [c.strip() for c in s.get("class_q_choices", "").splitlines()
                                                     if c.strip()])}
    if _try(class_polls.ask, follow.store(), held["code"], held["key"], question):
        s[SHOW_JOIN] = False


# ----------------------------------------------------------------------------- the top of the page
def banner() -> None:
    """The class's badge and question at the top of the page, and a class link's problem (once)."""
    problem = st.session_state.pop(follow.PROBLEM, None)
    if problem:
        st.warning(widgets.plain(problem), icon=":material/groups:")
    if follow.teacher() is not None:
        st.html(BADGE_CSS)
        _projector()
    elif follow.member() is not None:
        st.html(BADGE_CSS)
        _student()


@st.fragment(key="class_projector")
def _projector() -> None:
    """The teacher's badge (followers, the join code), the join code itself while shown, and the question."""
    held = follow.teacher()
    if held is None:
        return
    store = follow.store()
    read = store.versions([held["code"]]).get(held["code"])
    following, present = store.present(held["code"])
    with st.container(key="class_badge", horizontal=True):
        st.markdown(f":material/groups: **{following}** of {present} following")
        if st.button("Hide join code" if st.session_state.get(SHOW_JOIN) else "Join code", key="class_join_toggle"):
            st.session_state[SHOW_JOIN] = not st.session_state.get(SHOW_JOIN)
            st.rerun(scope="fragment")
    if st.session_state.get(SHOW_JOIN):
        link = join_link(held["code"])
        with st.container(key="class_join", border=True):
            st.markdown("**Join the class**: scan the code or open the link")
            st.html(qr_image(link, "QR code of the class link"))
            st.text(link)
    poll = class_polls.current(store, held["code"], held["key"])
    if poll is not None:
        _teacher_poll(held, poll)
    session = _session_id()
    if session is not None and read is not None:
        class_push.pusher(store).watch(session, held["code"], None, True, _fragment_id(), read)


def _bars(poll: class_polls.Poll, counts: list[int]) -> None:
    """The poll's answers so far: a line with their number, then one bar per option (its spec cached: a new answer
    sends new rows only)."""
    total = sum(counts)
    st.markdown(f"**{total}** answer{'s' if total != 1 else ''}" + (" · the right answer in green" if poll.revealed
                                                                    and poll.answer else ""))
    rows = charts.poll_rows(poll.options, counts, kind=poll.kind, right=poll.answer, revealed=poll.revealed)
    vega.draw_rows(charts.poll_bars, rows, across=True, count=len(poll.options), font_scale=widgets.font_scale())


def _teacher_poll(held: dict[str, str], poll: class_polls.Poll) -> None:
    store = follow.store()
    with st.container(key="class_poll", border=True):
        st.markdown(f"**Question:** {widgets.plain(poll.text)}")
        _bars(poll, class_polls.counts(store, poll.id))
        if poll.revealed:  # the projector shows the class: nothing of the answer before
            right = ", ".join(charts.option_labels(poll.options, poll.kind)[i] for i in poll.answer)
            st.success(widgets.plain(f"The answer: {right or 'no single right answer'}. {poll.why}".strip()),
                       icon=":material/check_circle:")
        cells = st.columns(2)
        if not poll.revealed:
            cells[0].button("Reveal the answer", key="class_reveal", type="primary",
                            on_click=_try, args=(class_polls.reveal, store, held["code"], held["key"]))
        cells[1].button("Close the question", key="class_close",
                        on_click=_try, args=(class_polls.close, store, held["code"], held["key"]))


@st.fragment(key="class_student")
def _student() -> None:
    """A student's badge (following or not) and the question of the moment."""
    mine = follow.member()
    if mine is None:
        return
    store = follow.store()
    read = store.versions([mine["code"]]).get(mine["code"])  # fresh: a fragment's own run follows a full one
    with st.container(key="class_badge", horizontal=True):
        if mine["following"]:
            st.markdown(":material/cast_for_education: Following the teacher")
            st.button("Explore on my own", key="class_detach", on_click=follow.set_following, args=(False,))
        else:
            st.markdown(":material/explore: On your own")
            if st.button("Catch up", key="class_catch_up", type="primary"):
                follow.set_following(True)
                st.rerun()
    poll = class_polls.current(store, mine["code"])
    if poll is not None:
        _student_poll(mine, poll)
    session = _session_id()
    if session is not None and read is not None:
        class_push.pusher(store).watch(session, mine["code"], mine["member"], mine["following"], _fragment_id(),
                                       follow.drawn_versions(read))


def _answer(mine: dict, poll: class_polls.Poll, key: str) -> None:
    choice = st.session_state.get(key)
    store = follow.store()
    if choice is None:
        return
    try:
        class_polls.answer(store, mine["code"], poll.id, mine["member"], int(choice))
    except ClassError as error:
        st.session_state[ANSWER_NOTE] = str(error)
        st.session_state[key] = class_polls.mine(store, poll.id, mine["member"])  # the first answer stays


def _student_poll(mine: dict, poll: class_polls.Poll) -> None:
    store = follow.store()
    own = class_polls.mine(store, poll.id, mine["member"])
    key = f"class_answer_{poll.id}"
    if own is not None and st.session_state.get(key) is None:
        st.session_state[key] = own
    with st.container(key="class_poll", border=True):
        st.markdown(f"**Your teacher asks:** {widgets.plain(poll.text)}")
        labels = charts.option_labels(poll.options, poll.kind) if poll.kind == "token" else list(poll.options)
        st.pills("Your answer", list(range(len(poll.options))), key=key, format_func=lambda i: labels[i],
                 on_change=_answer, args=(mine, poll, key), disabled=not poll.open and own is None,
                 label_visibility="collapsed")
        note = st.session_state.pop(ANSWER_NOTE, None)
        if note:
            st.warning(widgets.plain(note), icon=":material/block:")
        elif poll.revealed:
            right = ", ".join(labels[i] for i in poll.answer) or "no single right answer"
            verdict = "" if own is None or not poll.answer else (" — you got it." if own in poll.answer else
                                                                 " — not this time.")
            st.success(f"The answer: {widgets.plain(right)}{verdict}", icon=":material/check_circle:")
            if poll.why:
                st.caption(widgets.plain(poll.why))
            _bars(poll, class_polls.counts(store, poll.id))
        elif own is not None:
            st.caption("Your answer is in. The answer comes when your teacher reveals it.")
        elif not poll.open:
            st.caption("This question is closed.")
