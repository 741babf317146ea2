"""Reader prompts per context format, after the HtmlRAG authors' templates (``html4rag/chat_inference.py``).

The context is fenced with triple backticks and followed by a format-specific instruction and the question:

- html: "```{context}``` Please refer to the above html content and answer the question. {question}"
- text: "... Please refer to the above text content and answer the question. ..."
- markdown: "... Please refer to the above markdown content and answer the question. ..."

For the short-answer datasets (all but ELI5) :data:`SHORT_ANSWER` is appended, so that containment EM is
not rewarded for long rambling answers. The system message is "You are a helpful assistant." as in the
authors' Llama/Qwen templates.
"""

from __future__ import annotations

from htmlrag.core.errors import InputError

SYSTEM = "You are a helpful assistant."
SHORT_ANSWER = "Answer with a short phrase only (a name, number, date or short span), without explanation."
_KIND = {"html": "html content", "text": "text content", "markdown": "markdown content"}
TEMPLATE = "```{context}``` Please refer to the above {kind} and answer the question. {question}"


def user_prompt(question: str, context: str, fmt: str, short_answer: bool) -> str:
    """The user turn for ``question`` over ``context`` in format ``fmt`` (html, text or markdown)."""
    if fmt not in _KIND:
        raise InputError(f"unknown context format {fmt!r}; choose one of {', '.join(_KIND)}")
    text = TEMPLATE.format(context=context, kind=_KIND[fmt], question=question.strip())
    return f"{text} {SHORT_ANSWER}" if short_answer else text


def chat_messages(question: str, context: str, fmt: str, short_answer: bool, system: str | None = SYSTEM
                  ) -> list[dict[str, str]]:
    """OpenAI-style chat messages: an optional system turn and the user turn."""
    msgs = [{"role": "system", "content": system}] if system else []
    msgs.append({"role": "user", "content": user_prompt(question, context, fmt, short_answer)})
    return msgs


def render_plain(messages: list[dict[str, str]]) -> str:
    """A plain-text rendering of chat messages for models without a chat template."""
    return "\n\n".join(m["content"] for m in messages) + "\n\nAnswer:"


# ---------------------------------------------------------------- few-shot completion (base models)
#: The instruction line of :func:`completion_prompt`.
COMPLETION_INSTRUCTION = "Answer each question with a short phrase taken from its context."

#: Two worked examples per context format (``(context, question, answer)``): a sentence and a table, so that a
#: base model sees an answer copied from prose and one read off a table row.
FEW_SHOT: dict[str, tuple[tuple[str, str, str], ...]] = {
    "html": (
        ("<html><body><p>The Eiffel Tower was completed in 1889 in Paris, France.</p></body></html>",
         "In which city is the Eiffel Tower?", "Paris"),
        ("<html><body><table><tr><th>Year</th><th>Winner</th></tr><tr><td>1998</td><td>Ada Lane</td></tr>"
         "<tr><td>1999</td><td>Tom Reyes</td></tr></table></body></html>",
         "Who won in 1999?", "Tom Reyes"),
    ),
    "text": (
        ("The Eiffel Tower was completed in 1889 in Paris, France.", "In which city is the Eiffel Tower?", "Paris"),
        ("Year Winner\n1998 Ada Lane\n1999 Tom Reyes", "Who won in 1999?", "Tom Reyes"),
    ),
    "markdown": (
        ("The Eiffel Tower was completed in 1889 in Paris, France.", "In which city is the Eiffel Tower?", "Paris"),
        ("| Year | Winner |\n| --- | --- |\n| 1998 | Ada Lane |\n| 1999 | Tom Reyes |", "Who won in 1999?",
         "Tom Reyes"),
    ),
}
COMPLETION_SHOT = "Context: ```{context}```\nQuestion: {question}\nAnswer:"


def completion_prompt(question: str, context: str, fmt: str) -> str:
    """A few-shot completion prompt for base models that have no chat template.

    Layout: :data:`COMPLETION_INSTRUCTION`, a blank line, the two :data:`FEW_SHOT` examples of ``fmt`` and then
    the real one, each as ``Context: ```...```\\nQuestion: ...\\nAnswer: ...`` separated by blank lines; the
    prompt ends with ``"Answer:"``, so the model continues with the answer, and the reader stops at the end of
    that line (the examples teach a one-line answer). The same instruction serves every format; the examples'
    contexts are in ``fmt``.

    Raises:
        InputError: unknown ``fmt``.
    """
    if fmt not in FEW_SHOT:
        raise InputError(f"unknown context format {fmt!r}; choose one of {', '.join(FEW_SHOT)}")
    shots = [COMPLETION_SHOT.format(context=c, question=q) + f" {a}" for c, q, a in FEW_SHOT[fmt]]
    last = COMPLETION_SHOT.format(context=context, question=question.strip())
    return "\n\n".join([COMPLETION_INSTRUCTION, *shots, last])
