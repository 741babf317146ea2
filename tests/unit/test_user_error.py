"""What a command's last line says: the library error behind a framework's wrapper, or the file in the way."""

from __future__ import annotations

from htmlrag.core.errors import HtmlRagError, InputError, user_error


def _wrapped(inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise RuntimeError("Error in call to target 'load_page_questions'") from exc  # as Hydra wraps
    except RuntimeError as outer:
        return outer


def test_the_library_error_behind_a_wrapper_is_the_message() -> None:
    err = InputError("questions.jsonl:3: 'question' must be a non-empty string")
    assert user_error(_wrapped(err)) is err and user_error(err) is err


def test_a_file_in_the_way_is_named_with_the_reason() -> None:
    for exc in (IsADirectoryError(21, "Is a directory", "/r/predictions.jsonl"),
                NotADirectoryError(20, "Not a directory", "/r/afile/_hydra"),
                FileExistsError(17, "File exists", "/r/out")):
        found = user_error(_wrapped(exc))
        assert isinstance(found, HtmlRagError) and str(found) == f"{exc.filename}: {exc.strerror}"


def test_anything_else_is_a_bug_with_its_traceback() -> None:
    assert user_error(_wrapped(KeyError("stage_tokens"))) is None
    assert user_error(OSError(28, "No space left on device")) is None  # no file named: not "in the way"
    loop = RuntimeError("a")
    loop.__context__ = RuntimeError("b")
    loop.__context__.__context__ = loop  # a cycle ends the walk
    assert user_error(loop) is None
