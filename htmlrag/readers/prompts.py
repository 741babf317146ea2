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

from htmlrag.errors import InputError

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
