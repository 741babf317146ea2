"""A run stays verifiable whatever the harness's own commands do to it: every table and plot of a run lists its
systems in one order (``metrics.json["system_order"]``, :func:`htmlrag.evaluation.shapes.system_order`), whether
the run wrote it, ``htmlrag-paper report`` redrew it from the folder or ``htmlrag-paper verify`` recomputed it.

Before, ``htmlrag-paper report RUN_DIR`` rewrote ``tables/frontier_*`` with the systems by name (``metrics.json``
read back keeps its mappings sorted) where the run wrote them in the order they ran, and verify then named every
frontier row as differing. One quickstart run (budgets 64 and 128: frontier, waterfall, cost tables and plots; its
systems ran ``ours_minilm, vanilla, cleaned, bm25``, not by name) is made once; each test copies it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from htmlrag.evaluation.plots import PLOT_RECORDS
from htmlrag.evaluation.verify import verify_run
from htmlrag_bench.eval.paper import main as paper_main
from htmlrag_bench.eval.table import main as table_main
from tests.conftest import quickstart_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_run(tmp_path_factory.mktemp("order"))


def copy(made: Path, tmp: Path) -> Path:
    return Path(shutil.copytree(made, tmp / "root" / "quickstart" / made.name))


def files(run: Path, folder: str) -> dict[str, bytes]:
    base = run / folder
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def first_column(path: Path) -> list[str]:
    """The first cell of every body row of the file's first Markdown table (marks and row-group lines dropped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("|---"))
    body = lines[start + 1:]
    body = body[: next((i for i, x in enumerate(body) if not x.startswith("|")), len(body))]
    cells = [x.split("|")[1].strip() for x in body]
    return [re.sub(r"<[^>]+>|\*|†", "", c).strip() for c in cells if not c.startswith("*")]


def expected_orders(run: Path) -> dict[str, list[str]]:
    """The row order of each table of the run, from ``metrics.json["system_order"]`` alone: waterfall and cost one
    row per system in that order; a frontier table one row per system without its budget, in the order its first
    budget appears, the system under test last; results.md per budget the same, the system under test last."""
    summary = json.loads((run / "metrics.json").read_text())
    order, ours = summary["system_order"], summary["frontier"]["ours"]
    bases = list(dict.fromkeys(s.split("@")[0] for s in order))
    frontier = [b for b in bases if b != ours] + [ours]
    budgets = sorted({int(s.split("@")[1]) for s in order})
    return {"waterfall.md": order, "cost.md": order, "results.md": frontier * len(budgets),
            **{p.name: frontier for p in (run / "tables").glob("frontier_*.md")}}


def assert_clean_and_in_order(run: Path) -> None:
    report = verify_run(run)
    assert report.ok, [(f.where, f.stored, f.recomputed) for f in report.findings][:10]
    for name, order in expected_orders(run).items():
        assert first_column(run / "tables" / name) == order, name


COMMANDS = {
    "paper report RUN": (paper_main, ["report", "{run}"], 0),
    "paper report EXPERIMENT": (paper_main, ["report", "{experiment}"], 0),  # one run below: rewritten in place
    "paper report RUN RUN": (paper_main, ["report", "{run}", "{run}"], 0),  # one run, given twice
    "paper verify --write-tables RUN": (paper_main, ["verify", "-q", "--write-tables", "{run}"], 0),
    "paper table RUN": (paper_main, ["table", "{run}"], 2),  # refused: the run's tables/ are its own
    "paper info-loss RUN": (paper_main, ["info-loss", "{run}"], 2),
    "paper cost RUN": (paper_main, ["cost", "{run}"], 2),
    "paper figure5 RUN": (paper_main, ["figure5", "{run}"], 2),
    "paper table EXPERIMENT": (paper_main, ["table", "{experiment}"], 0),
    "bench-table RUN": (table_main, ["{run}"], 2),  # refused: the run's tables/ are its own
    "bench-table EXPERIMENT": (table_main, ["{experiment}"], 0),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_that_rewrites_a_run_leaves_it_verifiable(made: Path, tmp_path: Path, capsys, name: str) -> None:
    run = copy(made, tmp_path)
    assert_clean_and_in_order(run)
    tables, plots = files(run, "tables"), files(run, "plots")
    main, args, status = COMMANDS[name]
    got = main([a.format(run=run, experiment=run.parent) for a in args])
    capsys.readouterr()
    assert status is None or got == status, name
    assert_clean_and_in_order(run)
    after = files(run, "tables")
    assert {k: v for k, v in after.items() if k in tables} == tables  # the run's own tables, byte for byte
    assert files(run, "plots")[PLOT_RECORDS] == plots[PLOT_RECORDS]


def test_every_rewriting_command_in_a_row_leaves_the_run_as_it_wrote_itself(made: Path, tmp_path: Path,
                                                                             capsys) -> None:
    run = copy(made, tmp_path)
    tables, records = files(run, "tables"), (run / "plots" / PLOT_RECORDS).read_bytes()
    for args in (["verify", "-q", "--write-tables", str(run)], ["report", str(run)],
                 ["verify", "-q", "--write-tables", str(run)], ["report", str(run.parent)]):
        assert paper_main(args) == 0, args
    capsys.readouterr()
    assert_clean_and_in_order(run)
    assert files(run, "tables") == tables and (run / "plots" / PLOT_RECORDS).read_bytes() == records


def test_the_run_reports_tables_and_plots_do_not_depend_on_how_the_summary_holds_its_systems(made: Path) -> None:
    """The writer holds metrics.json in memory (systems in the order they ran), report and verify read the file
    (sorted): every table and plot of the run comes out the same from either, and from the mappings reversed."""
    from htmlrag.evaluation.report import judge_grid, recorded_prices, run_plots, run_report_tables
    from htmlrag.evaluation.run_tables import run_tables
    from htmlrag.evaluation.runs import open_run

    run = open_run(made)
    rows = run.rows()
    stored = run.summary
    memory = {**stored, "systems": {s: stored["systems"][s] for s in stored["system_order"]},
              "waterfall": {s: stored["waterfall"][s] for s in stored["system_order"]},
              "frontier": {**stored["frontier"], "systems": {b: stored["frontier"]["systems"][b] for b in
                                                             dict.fromkeys(s.split("@")[0] for s in
                                                                           stored["system_order"])}}}

    def reverse(node):
        if isinstance(node, dict):
            return {k: reverse(node[k]) for k in reversed(list(node))}
        return [reverse(v) for v in node] if isinstance(node, list) else node

    def texts(summary):
        made_tables, cost = run_report_tables(summary, rows, recorded_prices(made), "quickstart/x")
        out = {k: (t.to_markdown(), t.to_csv(), t.to_latex()) for k, t in made_tables.items()}
        out.update(run_tables(summary, rows, run="quickstart/x", pairwise=True))
        judge = {"judge": "j", "model": "m", "draws": 1,
                 "agreement": {"draws": {s: {"alpha": 1.0, "disagreements": 0} for s in summary["systems"]}}}
        out["judge"] = judge_grid(judge, summary).to_markdown()
        plots = run_plots(summary, cost)
        out["plots"] = {n: (p.digest(), json.dumps(p.data)) for n, p in plots.items()}
        return out

    a = texts(stored)
    assert a == texts(memory) == texts(reverse(stored)) == texts(reverse(memory))
    plots = run_plots(stored, json.loads((made / "cost.json").read_text()))
    assert [p["label"] for p in plots["pareto.png"].data["points"]] == stored["system_order"]
    assert [x["label"] for x in plots["frontier_em.png"].data["lines"]] == expected_orders(made)["frontier_em.md"]


def test_a_run_without_system_order_lists_its_systems_by_name_ours_last() -> None:
    from htmlrag.evaluation.shapes import in_system_order, system_order

    assert system_order({"systems": {"z": {}, "ours": {}, "a": {}}, "ours": "ours"}) == ["a", "z", "ours"]
    assert system_order({"systems": {"z": {}, "a": {}}, "ours": "m"}) == ["a", "z"]
    assert system_order({"systems": {"z": {}, "a": {}, "b": {}}, "system_order": ["z", "a"]}) == ["z", "a", "b"]
    assert in_system_order({"system_order": ["z", "a"]}, ["a", "q", "z", "b"]) == ["z", "a", "b", "q"]

