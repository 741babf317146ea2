"""``htmlrag prune --batch``: rows keyed by id + settings + input (never mixed), one writer per --out, the input
never overwritten, clear errors for bad files, line numbers that count blank lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from htmlrag.cli import batch as pb
from htmlrag.cli.main import main

PAGE = "<html><body>" + "".join(
    f"<div><h2>Part {i}</h2><p>{' '.join(f'word{i}x{j}' for j in range(60))} The tower was designed by "
    f"Margaret Ellis in {1800 + i}.</p></div>" for i in range(12)) + "</body></html>"


def _items(n: int = 4) -> list[dict]:
    return [{"id": f"q{i}", "question": f"Who designed the tower in {1800 + i}?", "pages": [PAGE]} for i in range(n)]


def _write(path: Path, items: list, blank_every: int = 0) -> Path:
    lines = []
    for k, it in enumerate(items):
        if blank_every and k % blank_every == 0:
            lines.append("   ")
        lines.append(it if isinstance(it, str) else json.dumps(it))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in out.read_text().splitlines()]


def _prune(src: Path, out: Path, *extra: str) -> int:
    return main(["prune", "--batch", str(src), "--out", str(out), "--budget", "200", *extra])


def test_changed_settings_recompute_everything_and_never_mix(tmp_path: Path) -> None:
    src, out = _write(tmp_path / "in.jsonl", _items()), tmp_path / "out.jsonl"
    assert _prune(src, out) == 0
    first = _rows(out)
    assert _prune(src, out, "--budget", "90") == 0        # same --out, a smaller budget
    second = _rows(out)
    assert [r["id"] for r in second] == ["q0", "q1", "q2", "q3"]
    assert len({r["settings"] for r in second}) == 1 and second[0]["settings"] != first[0]["settings"]
    assert all(r["tokens"] <= 90 for r in second)
    for flag in (["--format", "text"], ["--max-words", "64"], ["--no-pack"], ["--split-to-fill", "0"],
                 ["--keep-hidden"], ["--page-prior", "0.5"]):
        assert pb.settings_fingerprint(_args(src, out, *flag)) != pb.settings_fingerprint(_args(src, out)), flag
    assert pb.settings_fingerprint(_args(src, out, "--embed-cache", "x.sqlite")) == \
        pb.settings_fingerprint(_args(src, out))           # where the cache lives does not change a context


def _args(src: Path, out: Path, *extra: str) -> dict:
    import argparse

    from htmlrag.cli.prune import add_prune_parser

    p = argparse.ArgumentParser()
    add_prune_parser(p.add_subparsers(dest="command"))
    return vars(p.parse_args(["prune", "--batch", str(src), "--out", str(out), *extra]))


def test_resume_reuses_matching_rows_and_recomputes_changed_input(tmp_path: Path) -> None:
    items = _items(5)
    src, out = _write(tmp_path / "in.jsonl", items), tmp_path / "out.jsonl"
    assert _prune(src, out) == 0
    rows = _rows(out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:2]) + lines[2][:40])       # killed while writing the 3rd row
    items[1] = {**items[1], "question": "Which year is mentioned in part 7?"}   # and the input changed
    _write(src, items)
    assert _prune(src, out) == 0
    again = _rows(out)
    assert [r["id"] for r in again] == [f"q{i}" for i in range(5)]           # one row per line, input order
    assert again[0] == rows[0]                                               # reused as saved
    assert again[1]["input"] != rows[1]["input"]                             # recomputed for the new input
    assert [r["context"] for r in again[2:]] == [r["context"] for r in rows[2:]]   # torn/lost rows redone alike


def test_rows_without_a_key_are_recomputed(tmp_path: Path) -> None:
    src, out = _write(tmp_path / "in.jsonl", _items(2)), tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "q0", "context": "stale", "tokens": 1}) + "\n")   # an older version's row
    assert _prune(src, out) == 0
    assert [r["context"] != "stale" for r in _rows(out)] == [True, True]


def test_one_writer_per_out(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src, out = _write(tmp_path / "in.jsonl", _items(2)), tmp_path / "out.jsonl"
    with pb.locked(out):
        assert _prune(src, out) == 1
    assert "another htmlrag prune is writing it" in capsys.readouterr().err and not out.exists()
    assert _prune(src, out) == 0 and _prune(src, out) == 0
    assert [r["id"] for r in _rows(out)] == ["q0", "q1"]                     # never every id twice


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "relative"])
def test_out_that_is_the_input_is_refused(tmp_path: Path, how: str, capsys: pytest.CaptureFixture,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    src = _write(tmp_path / "in.jsonl", _items(2))
    before = src.read_bytes()
    out = {"same": src, "symlink": tmp_path / "link.jsonl", "hardlink": tmp_path / "hard.jsonl",
           "relative": Path("sub/../in.jsonl")}[how]
    if how == "symlink":
        out.symlink_to(src)
    elif how == "hardlink":
        os.link(src, out)
    elif how == "relative":
        (tmp_path / "sub").mkdir()
        monkeypatch.chdir(tmp_path)
    assert _prune(src, out) == 1
    assert "is the input file" in capsys.readouterr().err and src.read_bytes() == before


def test_bad_files_get_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(_items(1)[0]).encode() + b"\n" + '{"id": "x", "question": "caf\u00e9"}'.encode("latin-1"))
    assert _prune(bad, tmp_path / "o.jsonl") == 1
    assert "not UTF-8 text (byte 0xe9 on line 2)" in capsys.readouterr().err
    folder = tmp_path / "outdir"
    folder.mkdir()
    assert _prune(_write(tmp_path / "in.jsonl", _items(1)), folder) == 1
    assert "is a folder" in capsys.readouterr().err
    assert _prune(tmp_path / "missing.jsonl", tmp_path / "o.jsonl") == 1
    assert "cannot read" in capsys.readouterr().err


def test_blank_lines_keep_line_numbers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    items = [*_items(2), "{not json", {"question": "no id, no pages"}]
    src = _write(tmp_path / "in.jsonl", items, blank_every=1)   # a blank line before every item: lines 2,4,6,8
    out = tmp_path / "out.jsonl"
    assert _prune(src, out) == 1
    err = capsys.readouterr().err
    rows = _rows(out)
    assert "line 6: invalid JSON" in err and "line 8: needs 'pages'" in err
    assert [r["id"] for r in rows] == ["q0", "q1", 5, 7]                     # default id: 0-based line index


def _varied_items(n: int) -> list:
    """Items whose contexts differ (questions, pages, budgets fill differently), one bad line among them."""
    items: list = []
    for i in range(n):
        page = PAGE.replace("Margaret Ellis", f"Designer {i}").replace("tower", ["tower", "bridge", "hall"][i % 3])
        items.append({"id": f"v{i}", "question": f"Who designed the {['tower', 'bridge', 'hall'][i % 3]} in "
                      f"{1800 + i % 12}?", "pages": [page, PAGE] if i % 2 else [page]})
    items.insert(n // 2, {"id": "bad", "question": 7, "pages": [PAGE]})
    return items


def _same_rows(out: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in _rows(out)]


def test_parallel_workers_write_the_rows_of_one_process(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = _write(tmp_path / "in.jsonl", _varied_items(9), blank_every=4)
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    assert _prune(src, one, "--workers", "1") == 1          # the bad line makes the run fail, the rest is written
    assert _prune(src, many, "--workers", "3") == 1
    assert "(3 processes)" in capsys.readouterr().err
    rows = _same_rows(many)
    assert rows == _same_rows(one)                           # same contexts, ids, tokens, errors, input order
    assert [r["id"] for r in rows] == [f"v{i}" for i in range(4)] + ["bad"] + [f"v{i}" for i in range(4, 9)]
    assert len({r["context"] for r in rows if "context" in r}) >= 5     # items differ, so would a mix-up
    # how many processes is not a setting: a rerun with another count reuses every good row
    assert _prune(src, many, "--workers", "2") == 1
    assert "9 skipped" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_bad_worker_counts_are_refused(tmp_path: Path, value: str, capsys: pytest.CaptureFixture) -> None:
    src = _write(tmp_path / "in.jsonl", _items(2))
    with pytest.raises(SystemExit) as exit_:  # refused when parsed (htmlrag.core.options), exit 2
        _prune(src, tmp_path / "out.jsonl", "--workers", value)
    assert exit_.value.code == 2
    assert f"argument --workers: must be 'auto' or an integer >= 1, got {value!r}" in capsys.readouterr().err


def test_auto_workers_use_every_core_for_bm25_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from htmlrag.cli.prune import batch_workers

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    a = argparse.Namespace(**_args(tmp_path / "i", tmp_path / "o"))
    assert batch_workers(a, 100) == 4 and batch_workers(a, 3) == 3   # never more processes than items
    a.ranker = "embed"
    assert batch_workers(a, 100) == 1                                 # torch uses every core already
    a.ranker, a.ranker2 = "bm25", "gen"
    assert batch_workers(a, 100) == 1


def test_a_worker_that_dies_fails_the_run_and_a_rerun_completes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    from htmlrag.cli import prune as cli_prune

    items = _items(6)
    src, out = _write(tmp_path / "in.jsonl", items), tmp_path / "out.jsonl"
    real = cli_prune._prune_line

    def dies_on_q3(pipe, line, item_id, base, *rest):
        if item_id == "q3":
            os._exit(3)  # a worker killed mid-item (OOM killer, segfault)
        return real(pipe, line, item_id, base, *rest)

    monkeypatch.setattr(cli_prune, "_prune_line", dies_on_q3)   # workers are forked (BM25): they see the patch
    assert _prune(src, out, "--workers", "2") == 1
    err = capsys.readouterr().err
    assert "a batch worker process died" in err and "a rerun computes the rest" in err
    kept = _rows(out)
    assert "q3" not in {r["id"] for r in kept} and len(kept) == len({r["id"] for r in kept})
    monkeypatch.setattr(cli_prune, "_prune_line", real)
    assert _prune(src, out, "--workers", "2") == 0
    assert [r["id"] for r in _rows(out)] == [f"q{i}" for i in range(6)]   # nothing lost, nothing twice


def test_an_edited_page_file_is_pruned_again(tmp_path: Path) -> None:
    """A saved row is reused only while the files its ``page_paths`` name hold the same bytes: after an edit the
    old context was kept, '0 done now, 1 skipped', exit 0."""
    (tmp_path / "p.html").write_text("<p>Margaret Ellis designed the Harrow Point Lighthouse in 1871.</p>")
    src = _write(tmp_path / "in.jsonl", [{"id": "x", "question": "Who designed it?", "page_paths": ["p.html"]}])
    out = tmp_path / "out.jsonl"
    assert _prune(src, out) == 0 and "Margaret Ellis" in _rows(out)[0]["context"]
    (tmp_path / "p.html").write_text("<p>John Smith built the lighthouse.</p>")
    assert _prune(src, out) == 0
    assert "John Smith" in _rows(out)[0]["context"] and "Margaret" not in _rows(out)[0]["context"]
    assert _prune(src, out) == 0 and len(_rows(out)) == 1    # unchanged: reused, still one row


@pytest.mark.parametrize(("item", "error"), [
    ({"id": "e", "question": "q?", "pages": []}, "no pages"),
    ({"id": "e", "question": "q?", "page_paths": []}, "no pages"),
    ({"id": "e", "question": "q?", "pages": ["  "]}, "page 0 is empty"),
    ({"id": "e", "question": "q?", "page_paths": ["empty.html"]}, "page 0 is empty"),
    ({"id": "e", "question": " ", "pages": [PAGE]}, "'question' must be a non-empty string"),
    ({"id": "e", "question": "q?", "pages": [PAGE], "page_paths": ["p.html"]}, "not both"),
    ('{"id": 1' + "1" * 5000 + ', "question": "q?"}', "invalid JSON"),
])
def test_an_item_without_anything_to_prune_is_an_error_row(tmp_path: Path, item, error: str, capsys) -> None:
    """An empty context with 0 tokens and no error is what a wrong path or a failed export looks like."""
    (tmp_path / "empty.html").write_bytes(b"")
    src = _write(tmp_path / "in.jsonl", [_items(1)[0], item])
    out = tmp_path / "out.jsonl"
    assert _prune(src, out) == 1
    rows = _rows(out)
    assert len(rows) == 2 and "error" not in rows[0] and error in rows[1]["error"], rows[1]


def test_two_lines_of_one_id_are_refused_before_any_work(tmp_path: Path, capsys) -> None:
    items = _items(3)
    items[2]["id"] = "q0"
    src, out = _write(tmp_path / "in.jsonl", items), tmp_path / "out.jsonl"
    assert _prune(src, out) == 1
    assert "lines 1 and 3: both have id 'q0'" in capsys.readouterr().err and not out.exists()
