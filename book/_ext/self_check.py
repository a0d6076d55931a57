"""``self-check``: a chapter's concept questions, answered on the site, printed with
their answers.

In a chapter, a Markdown cell holds the directive with the self-check's name::

    ```{self-check} ch03
    ```

and ``book/selfcheck/ch03.yml`` holds the questions (``self_check_questions.py``
describes and checks the file; the config value ``self_check_dir`` moves the folder).

- **On the site** each question is a ``<fieldset>`` whose ``<legend>`` is the
  question, one native radio button with its ``<label>`` per option, a *Check*
  button and a live region (``role="status"``) that says whether the chosen answer
  is right and why. Everything works from the keyboard: Tab reaches the group, the
  arrow keys choose, Tab and Enter check. ``self_check.js``, a classic script (not
  a module, so that a page opened from ``file://`` runs it too), does the checking
  with no kernel and no server; the explanations are in the page, hidden, so that
  MathJax typesets them with the rest. Without JavaScript the button stays hidden.
- **In print** (the instructors' edition) and in every other non-HTML output the
  questions are a numbered list, each option lettered, the correct one marked, and
  every option followed by its explanation: plain docutils nodes, typeset by
  Sphinx's LaTeX writer like the rest of the book. In the students' edition
  (``RELPOS_EDITION=students``, book/_ext/editions.py) the questions come with
  their options unmarked, and the answers follow the last one, each question's
  correct letter and every option's explanation, as the students' notebooks fold
  them away (``self_check_questions.as_markdown``).
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from editions import students
from self_check_questions import DATA, data_file, letter, load_questions

SCRIPT = Path(__file__).with_name("self_check.js")
STYLESHEET = Path(__file__).with_name("self_check.css")
MARKER = 'class="relpos-self-check"'
HTML_INTRO = (
    "Choose an answer to each question and press Check: you are told whether it is "
    "right and why. Try the other answers too; each has its own explanation."
)
PRINT_INTRO = (
    "The answers, for instructors: the correct option of each question is marked, "
    "and every option is followed by the explanation a reader gets on the website."
)
STUDENTS_INTRO = "Answer each question, then read the answers after the last one."


class self_check(nodes.General, nodes.Element):
    """A chapter's self-check: its questions in order (``chapter``: its name)."""


class self_check_question(nodes.General, nodes.Element):
    """One question: a prompt and its options (``number``, ``correct``: the index)."""


class self_check_prompt(nodes.General, nodes.TextElement):
    """The question's text (``number``)."""


class self_check_option(nodes.General, nodes.Element):
    """One option: its label and its explanation (``input_id``, ``name``, ``value``,
    ``correct``)."""


class self_check_label(nodes.General, nodes.TextElement):
    """An option's answer text."""


class self_check_why(nodes.General, nodes.TextElement):
    """An option's explanation, one sentence (``ids``: its id, hidden in the page)."""


class SelfCheck(SphinxDirective):
    """``self-check NAME``: the questions of ``NAME.yml`` in ``self_check_dir``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        directory = Path(self.config.self_check_dir or DATA)
        try:
            path = data_file(name, directory)
            questions = load_questions(path)
        except (ValueError, OSError) as error:
            raise self.error(f"self-check {name}: {error}") from None
        self.env.note_dependency(str(path))
        root = self_check(chapter=name, ids=[f"self-check-{name}"])
        for number, question in enumerate(questions, start=1):
            base = f"self-check-{name}-{question.id}"
            entry = self_check_question(
                ids=[base], number=number, correct=question.correct
            )
            prompt = self.inline(question.question)
            entry += self_check_prompt("", "", *prompt, number=number)
            for index, option in enumerate(question.options):
                choice = self_check_option(
                    input_id=f"{base}-{letter(index)}",
                    name=base,
                    value=index,
                    correct=option.correct,
                )
                choice += self_check_label("", "", *self.inline(option.answer))
                why = self_check_why("", "", *self.inline(option.why))
                why["ids"] = [f"{base}-{letter(index)}-why"]
                choice += why
                entry += choice
            root += entry
        return [root]

    def inline(self, text: str) -> list[nodes.Node]:
        children, messages = self.state.inline_text(text, self.lineno)
        return children + messages


# -- the site ---------------------------------------------------------------------


def _attributes(**values: Any) -> str:
    return "".join(
        f' {name.rstrip("_").replace("_", "-")}="{html.escape(str(value))}"'
        for name, value in values.items()
    )


def visit_self_check(self, node: self_check) -> None:
    self.body.append(
        f"<div{_attributes(class_='relpos-self-check', id=node['ids'][0])}"
        f"{_attributes(data_chapter=node['chapter'])}>"
        f'<p class="relpos-self-check-intro">{html.escape(HTML_INTRO)}</p>'
    )


def depart_self_check(self, node: self_check) -> None:
    self.body.append("</div>\n")


def visit_question(self, node: self_check_question) -> None:
    self.body.append(
        f'<div class="relpos-self-check-question"'
        f'{_attributes(id=node["ids"][0], data_correct=node["correct"])}><fieldset>'
    )


def depart_question(self, node: self_check_question) -> None:
    self.body.append(
        "</fieldset>"
        '<button type="button" class="relpos-self-check-button" hidden>Check</button>'
        '<p class="relpos-self-check-feedback" role="status" aria-live="polite"></p>'
        "</div>\n"
    )


def visit_prompt(self, node: self_check_prompt) -> None:
    self.body.append(
        f'<legend><span class="relpos-self-check-number">{node["number"]}.</span> '
    )


def depart_prompt(self, node: self_check_prompt) -> None:
    self.body.append("</legend>")


def visit_option(self, node: self_check_option) -> None:
    why = node.children[1]["ids"][0]  # the option's self_check_why
    self.body.append(
        '<div class="relpos-self-check-option">'
        f'<input type="radio"{_attributes(name=node["name"], id=node["input_id"])}'
        f'{_attributes(value=node["value"], data_why=why)}>'
    )


def depart_option(self, node: self_check_option) -> None:
    self.body.append("</div>")


def visit_label(self, node: self_check_label) -> None:
    option = node.parent
    self.body.append(f"<label{_attributes(for_=option['input_id'])}>")


def depart_label(self, node: self_check_label) -> None:
    self.body.append("</label>")


def visit_why(self, node: self_check_why) -> None:
    self.body.append(
        f'<span class="relpos-self-check-why"{_attributes(id=node["ids"][0])} hidden>'
    )


def depart_why(self, node: self_check_why) -> None:
    self.body.append("</span>")


def add_assets(app, pagename, templatename, context, doctree) -> None:
    if MARKER in (context.get("body") or ""):
        app.add_js_file(SCRIPT.name, loading_method="defer")
        app.add_css_file(STYLESHEET.name)


def copy_assets(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    for asset in (SCRIPT, STYLESHEET):
        shutil.copyfile(asset, static / asset.name)


# -- print and every other output -------------------------------------------------


class PrintSelfCheck(SphinxPostTransform):
    """Outside HTML, a self-check becomes a numbered list of its questions, each
    option lettered, the correct one marked, every one with its explanation."""

    default_priority = 200

    def run(self, **kwargs: Any) -> None:
        if self.app.builder.format == "html":
            return
        for node in list(self.document.findall(self_check)):
            node.replace_self(self.printed(node))

    def printed(self, node: self_check) -> list[nodes.Node]:
        def paragraph(element: nodes.Element) -> nodes.paragraph:
            return nodes.paragraph("", "", *element.deepcopy().children)

        def numbered(kind: str, prefix: str, suffix: str) -> nodes.enumerated_list:
            return nodes.enumerated_list(enumtype=kind, prefix=prefix, suffix=suffix)

        for_students = students()
        questions = numbered("arabic", "", ".")
        answers = numbered("arabic", "", ".")  # the students' edition's key
        for question in node.children:  # self_check_question
            prompt, *choices = question.children
            item = nodes.list_item("", paragraph(prompt))
            options = numbered("loweralpha", "(", ")")
            key = nodes.paragraph("", "", nodes.strong("", letter(question["correct"])))
            for index, option in enumerate(choices):  # its label and its why
                label, why = option.children
                answer = paragraph(label)
                if for_students:
                    options += nodes.list_item("", answer)
                    explained = paragraph(why).children
                    key += [nodes.Text(f" ({letter(index)}) "), *explained]
                    continue
                if option["correct"]:
                    answer += [nodes.Text(" "), nodes.strong("", "(correct)")]
                options += nodes.list_item("", answer, paragraph(why))
            item += options
            questions += item
            answers += nodes.list_item("", key)
        if for_students:
            intro = nodes.paragraph("", STUDENTS_INTRO)
            return [intro, questions, nodes.rubric(text="Answers"), answers]
        return [nodes.paragraph("", PRINT_INTRO), questions]


def setup(app):
    app.add_config_value("self_check_dir", "", "env", types=[str])
    for node, visit, depart in (
        (self_check, visit_self_check, depart_self_check),
        (self_check_question, visit_question, depart_question),
        (self_check_prompt, visit_prompt, depart_prompt),
        (self_check_option, visit_option, depart_option),
        (self_check_label, visit_label, depart_label),
        (self_check_why, visit_why, depart_why),
    ):
        app.add_node(node, html=(visit, depart))
    app.add_directive("self-check", SelfCheck)
    app.add_post_transform(PrintSelfCheck)
    app.connect("html-page-context", add_assets)
    app.connect("build-finished", copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
