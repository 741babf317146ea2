"""What a metric sees for one example, and the normalisation every answer comparison uses.

Shared by the QA metrics (:mod:`htmlrag.evaluation.scoring.qa`) and the document-QA key items and metrics
(:mod:`htmlrag.docqa`), which sit below the evaluation, so both import it from here. It shapes prediction
rows (every metric compares normalised strings), so it is in the run id's code set
(:data:`htmlrag.core.fingerprint.ROWS`).

Normalisation (:func:`normalize_answer`) is SQuAD's: lower-case, drop ASCII punctuation (``string.punctuation``),
drop the articles *a*, *an*, *the* as whole words, collapse whitespace (any Unicode whitespace). We apply
Unicode NFC first so that composed and decomposed accents compare equal; nothing else is changed (non-ASCII
punctuation such as curly quotes is kept, exactly as in SQuAD and in the HtmlRAG authors' code).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: NFC, lower-case, remove ASCII punctuation, remove articles, collapse whitespace."""
    text = unicodedata.normalize("NFC", text).lower()
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class MetricInput:
    """What a metric sees for one example.

    Attributes:
        response: the reader's answer ("" with ``reader=none``).
        context: the context handed to the reader, after cutting it to the reader's window.
        answers: gold short answers (aliases or several answers of a multi-answer question).
        long_answers: gold long-form answers (ASQA, ELI5); may be empty.
        answer_groups: for ASQA, one list of aliases per disambiguated sub-question; for document QA, one
            group per gold key item; may be empty.
        context_text: the context as plain text (tags removed), used for reference-text EM.
    """

    response: str = ""
    context: str = ""
    answers: Sequence[str] = ()
    long_answers: Sequence[str] = ()
    answer_groups: Sequence[Sequence[str]] = ()
    context_text: str | None = None
