"""A class under AppTest: two sessions of the app, a teacher and a student, sharing the class store of one runs
folder. A student's run applies the teacher's screen (what the pusher's rerun does in a served app): the page, the
Lesson's stage, sentence and head, Explore's model, layer and head; a forged link cannot move the class; "Explore on
my own" and "Catch up"; a poll answered once and revealed; the lines for a wrong, ended or full class."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app.services import class_polls, classroom
from app.ui import class_follow
from tests.helpers.apptest_helpers import open_page


def _teacher(page: str = "lesson") -> tuple[AppTest, dict[str, str]]:
    at = open_page(page, timeout=60, every_section=False)
    at.button(key="class_start").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at, at.session_state[class_follow.TEACHER]


def _student(code: str, query: dict[str, str] | None = None) -> AppTest:
    at = open_page("explore", query={"class": code, **(query or {})}, timeout=60, every_section=False)
    assert not at.exception, [e.message for e in at.exception]
    return at


def _store() -> classroom.ClassStore:
    return class_follow.store()


def _texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [t.value for t in at.text] + [w.value for w in at.warning]
                     + [c.value for c in at.caption] + [s.value for s in at.success])


def test_starting_a_class_gives_a_link_and_a_qr_code_and_no_link_holds_the_teacher_key(runs):
    teacher, held = _teacher()
    assert len(held["code"]) == 22 and len(held["key"]) == 22 and held["code"] != held["key"]
    links = [t.value for t in teacher.text if "?class=" in t.value]
    assert links and all(link.endswith(f"?class={held['code']}") for link in links)
    assert any("data:image/svg+xml" in h.proto.body and "QR code" in h.proto.body for h in teacher.get("html"))
    assert held["key"] not in "".join(teacher.query_params.values()) and "class" not in teacher.query_params
    assert held["key"] not in "".join(links)
    assert "0** of 0 following" in _texts(teacher)
    screen = _store().screen(held["code"])
    assert screen.page == "lesson" and screen.params["stage"] == "1" and "projector" not in screen.params


def test_a_student_follows_the_teachers_page_stage_sentence_and_head(runs):
    teacher, held = _teacher()
    teacher.text_input(key="lesson_text").set_value("the red car").run()
    teacher.selectbox(key="lesson_head").set_value(1).run()
    for _ in range(3):
        teacher.button(key="lesson_next").click().run()
    student = _student(held["code"])  # opened on Explore: moved to the teacher's Lesson
    assert student.header[0].value.startswith("4. ")
    assert (student.session_state["lesson_text"], student.session_state["lesson_head"],
            student.session_state["lesson_stage"]) == ("the red car", 1, 3)
    assert student.query_params["class"] == held["code"]
    assert "1** of 1 following" in _texts(teacher.run())
    teacher.button(key="lesson_next").click().run()
    student.run()  # what the pusher asks for once the teacher's screen moved
    assert student.header[0].value.startswith("5. ")
    teacher.switch_page("views/explore.py").run()
    teacher.selectbox(key="ckpt").set_value("shipped:reverse").run()
    teacher.session_state["head"] = 2  # the teacher pins head 2 on the attention canvas
    teacher.run()
    student.run()
    assert student.session_state["ckpt"] == "shipped:reverse" and student.session_state["head"] == 2
    assert not student.header or not student.header[0].value.startswith("5. ")  # left the Lesson with the teacher


def test_a_student_page_cannot_move_the_class_even_with_the_teachers_parameters_forged(runs):
    teacher, held = _teacher()
    teacher.button(key="lesson_next").click().run()
    before = _store().screen(held["code"])
    forged = {"lesson_stage": "9", "lesson_text": "forged", "teacher": held["code"], "key": held["code"]}
    student = _student(held["code"], forged)
    assert student.session_state["lesson_stage"] == 1 and student.session_state["lesson_text"] != "forged"
    student.selectbox(key="lesson_stage").set_value(12).run()  # the student moves its own page
    student.button(key="lesson_next").click().run()
    assert _store().screen(held["code"]) == before
    student.session_state[class_follow.TEACHER] = {"code": held["code"], "key": held["code"]}  # a guessed key
    student.button(key="lesson_next").click().run()
    assert _store().screen(held["code"]) == before
    student.run()
    assert class_follow.TEACHER not in student.session_state
    assert any("This class has ended" in w.value or "Only the class's teacher" in w.value for w in student.warning)


def test_explore_on_my_own_detaches_and_catch_up_rejoins(runs):
    teacher, held = _teacher()
    student = _student(held["code"])
    student.button(key="class_detach").click().run()
    assert "0** of 1 following" in _texts(teacher.run())
    for _ in range(2):
        teacher.button(key="lesson_next").click().run()
    student.run()
    assert student.session_state["lesson_stage"] == 0  # on its own: the teacher's moves pass it by
    student.button(key="class_catch_up").click().run()
    assert student.session_state["lesson_stage"] == 2 and student.header[0].value.startswith("3. ")
    assert "1** of 1 following" in _texts(teacher.run())


def _ask(teacher: AppTest, text: str, choices: str, right: str, why: str) -> None:
    teacher.text_input(key="class_q_text").set_value(text)
    teacher.text_area(key="class_q_choices").set_value(choices)
    teacher.text_input(key="class_q_right").set_value(right)
    teacher.text_input(key="class_q_why").set_value(why)
    next(b for b in teacher.button if b.label == "Ask the class").click().run()
    assert not teacher.exception


def test_a_poll_is_answered_once_and_revealed(runs):
    teacher, held = _teacher()
    student = _student(held["code"])
    _ask(teacher, "Will this row still sum to 1 after the mask?", "yes\nno", "yes", "Softmax renormalises.")
    student.run()
    assert "Will this row still sum to 1 after the mask?" in _texts(student)
    key = next(k for k in student.session_state if str(k).startswith("class_answer_"))
    assert "Softmax renormalises" not in _texts(student)  # nothing of the answer before the reveal
    student.button_group(key=key).set_value(1).run()  # "no"
    assert "Your answer is in" in _texts(student)
    student.button_group(key=key).set_value(0).run()  # a second try
    assert "already answered this question" in _texts(student)
    poll = class_polls.current(_store(), held["code"])
    assert class_polls.counts(_store(), poll.id) == [0, 1]
    teacher.run()
    assert "**1** answer" in _texts(teacher)
    teacher.button(key="class_reveal").click().run()
    student.run()
    assert "The answer: yes — not this time." in _texts(student) and "Softmax renormalises" in _texts(student)
    assert "no,no" in class_polls.answers_csv(_store(), held["code"], held["key"])


def test_a_click_a_token_poll_shows_the_sentences_tokens(runs):
    teacher, held = _teacher()
    student = _student(held["code"])
    teacher.radio(key="class_q_kind").set_value("Click a token")
    teacher.text_input(key="class_q_sentence").set_value("the cat sat on the mat")
    _ask(teacher, "Which word does 'sat' attend to?", "", "cat", "")
    student.run()
    key = next(k for k in student.session_state if str(k).startswith("class_answer_"))
    assert student.button_group(key=key).options == ["1. the", "2. cat", "3. sat", "4. on", "5. the", "6. mat"]


def test_a_question_that_cannot_be_asked_says_why(runs):
    teacher, held = _teacher()
    _ask(teacher, "One choice?", "only", "", "")
    assert any("2 to 6 choices" in w.value for w in teacher.warning)
    assert class_polls.current(_store(), held["code"]) is None


def test_a_wrong_ended_or_full_class_gets_one_line(runs):
    wrong = _student("A" * 22)
    assert any("This class link is not valid" in w.value for w in wrong.warning) and not wrong.exception
    assert class_follow.MEMBER not in wrong.session_state
    teacher, held = _teacher()
    student = _student(held["code"])
    teacher.button(key="class_end").click().run()
    student.run()
    assert any("This class has ended" in w.value for w in student.warning)
    assert class_follow.MEMBER not in student.session_state and not student.exception
    again = _student(held["code"])
    assert any("This class has ended" in w.value for w in again.warning)
    full, held = _teacher()
    for i in range(classroom.MAX_STUDENTS):
        _store().join(held["code"], f"member-{i}")
    late = _student(held["code"])
    assert any("This class is full: it already has 300 students" in w.value for w in late.warning)
    assert "300** of 300 following" in _texts(full.run())


def test_a_teachers_next_is_followed_by_the_lesson_body_fragment_alone(runs):
    from tests.app.test_app_learn_fragments import rerun_fragment

    teacher, held = _teacher()
    student = _student(held["code"])
    assert student.header[0].value.startswith("1. ")
    teacher.text_input(key="lesson_text").set_value("the red car").run()
    teacher.button(key="lesson_next").click().run()
    teacher.button(key="lesson_next").click().run()
    rerun_fragment(student, "lesson_body")  # what the pusher asks for: the page's fragment, not the sidebar
    assert not student.sidebar.selectbox and not student.title  # the sidebar and the page's top were not drawn
    assert student.header[0].value.startswith("3. ")
    assert (student.session_state["lesson_text"], student.session_state["lesson_stage"]) == ("the red car", 2)
    assert student.query_params["stage"] == "3" and student.query_params["class"] == held["code"]
    assert student.session_state[class_follow.MEMBER]["applied"] == _store().screen(held["code"]).version
    rerun_fragment(student, "lesson_body")  # nothing moved: the fragment draws what it drew
    assert student.header[0].value.startswith("3. ")
