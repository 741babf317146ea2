"""Pruner training samples: labels (which block holds the answer), the prompt format, buckets, drops and why."""

from __future__ import annotations

import json

import pytest

from htmlrag.data import Example
from htmlrag.html.blocktree import build_block_tree
from htmlrag.rankers.generative import block_paths, build_pruner_messages, path_string
from htmlrag_bench.training.samples import (
    BuildSettings,
    SampleBuilder,
    answer_scores,
    build_samples,
    contains_answer,
)
from tests.conftest import shared_path
from tests.helpers.train_items import page, synthetic_items


class WordCounter:
    """A deterministic token counter: one token per whitespace-separated piece."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts):
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split()[:max_tokens])


def _paragraphs(n: int, words: int = 20, tag: str = "x") -> str:
    return "".join(f"<p>{' '.join(f'{tag}{i}w{j}' for j in range(words))}</p>" for i in range(n))


def test_containment_is_on_word_boundaries_and_sees_through_footnote_marks():
    assert contains_answer("he was born in 1992", "1992")
    assert not contains_answer("he was born in 1992", "2")
    tree = build_block_tree("<html><body><p>Variant SA 330L<sup>[7]</sup> entered service</p><p>other text here</p>"
                            "</body></html>", max_words=4)
    scores = answer_scores(tree.blocks, ["SA 330L"])
    assert max(scores) == 1.0
    assert "330L" in tree.blocks[scores.index(1.0)].text


def test_cjk_answers_match_without_spaces():
    tree = build_block_tree("<html><body><p>灯塔建于一九五六年。</p><p>另一段文字内容</p></body></html>", max_words=4)
    assert max(answer_scores(tree.blocks, ["一九五六年"])) == 1.0


def test_sample_is_the_rankers_prompt_and_the_answer_starts_with_the_target_path():
    items = synthetic_items()
    samples, stats = build_samples(items, WordCounter(), BuildSettings(max_words=16))
    assert stats.samples == len(items) == len(samples)
    assert len({s["target_path"] for s in samples}) >= 3  # answers sit in different kinds of blocks
    for item, sample in zip(items, samples):
        trees = [build_block_tree(p, max_words=16, clean=True) for p in item.pages]
        # the user turn is exactly the ranker's prompt over the same pages
        assert sample["messages"][:1] == build_pruner_messages(item.question, [t.html() for t in trees])
        # the target is a block path as the ranker names it (html0/html1 with two pages), and it holds the answer
        paths = [path_string(p) for p in block_paths(trees)]
        assert sample["target_path"] in paths
        block = [b for t in trees for b in t.blocks][paths.index(sample["target_path"])]
        assert item.answers[0].lower() in block.text.lower()
        answer = sample["messages"][1]
        assert answer["role"] == "assistant" and answer["content"].startswith(sample["target_path"])
        assert item.answers[0] in answer["content"]  # released format: the path, then the block's HTML


@pytest.mark.parametrize("fmt", ["path", "path_text"])
def test_answer_formats(fmt):
    sample = build_samples(synthetic_items()[:1], WordCounter(), BuildSettings(max_words=16, answer=fmt))[0][0]
    content = sample["messages"][1]["content"]
    assert content.startswith(sample["target_path"])
    rest = content[len(sample["target_path"]):]
    assert rest == "" if fmt == "path" else ("Anna Berg" in rest and "<" not in rest)


def test_gold_page_restricts_targets():
    fact = "The mill was built by Anna Berg."
    item = Example(id="g", question="Who built the mill?", answers=["Anna Berg"],
                   pages=[page(0, fact), page(1, fact)], metadata={"gold_page": 1})
    sample = build_samples([item], WordCounter(), BuildSettings(max_words=16))[0][0]
    assert sample["target_path"].startswith("<html1>")
    assert any(p.startswith("<html1>") for p in sample["target_paths"])
    assert not any(p.startswith("<html0>") for p in sample["target_paths"])


def test_answer_in_no_block_is_dropped_with_the_reason():
    items = synthetic_items()[:2]
    items[1].answers = ["Zanzibar"]
    samples, stats = build_samples(items, WordCounter(), BuildSettings(max_words=16))
    assert [s["id"] for s in samples] == ["syn-0"]
    report = stats.to_dict()
    assert report["dropped"]["no_answer_block"] == 1 and report["items_labelled"] == 1
    assert report["label_coverage"] == 0.5
    assert "syn-1" in report["dropped_examples"]["no_answer_block"][0]


def test_empty_and_broken_pages_are_counted_and_an_item_without_text_is_dropped():
    good = synthetic_items()[0]
    good.pages = [*good.pages, "", b"\x00\x01\x02binary\xff" * 50]
    empty = Example(id="empty", question="q?", answers=["bee"], pages=["", "<html><body></body></html>"])
    samples, stats = build_samples([good, empty], WordCounter(), BuildSettings(max_words=16))
    assert [s["id"] for s in samples] == ["syn-0"] and samples[0]["pages"] == 2
    report = stats.to_dict()
    assert report["dropped"]["no_pages"] == 1
    assert report["pages_empty"] + report["pages_failed"] == 4


def test_over_length_is_truncated_by_removing_distractors_or_dropped_as_configured():
    fact = "<p>The keeper was Margaret Ellis for forty years.</p>"
    gold = f"<html><body>{_paragraphs(2, tag='g')}{fact}</body></html>"
    big = f"<html><body>{_paragraphs(40, tag='d')}</body></html>"  # ~800 words
    item = Example(id="long", question="Who was the keeper?", answers=["Margaret Ellis"], pages=[big, gold, big])
    buckets = (256, 512)
    # truncate: both big distractors go, the target path is renamed (one page left -> plain <html>)
    samples, stats = build_samples([item], WordCounter(), BuildSettings(max_words=16, buckets=buckets))
    (s,) = samples
    assert s["pages"] == 1 and s["pages_removed"] == 2 and s["target_path"].startswith("<html><body>")
    assert s["tokens"] <= 256 and s["bucket"] == "256"
    assert stats.to_dict()["truncated_samples"] == 1
    # drop: the same item over the largest bucket is dropped with its reason
    samples, stats = build_samples([item], WordCounter(), BuildSettings(max_words=16, buckets=buckets,
                                                                        overlength="drop"))
    assert samples == [] and stats.to_dict()["dropped"]["over_length"] == 1
    # the target page alone is too long: dropped even when truncating
    alone = Example(id="alone", question="Who?", answers=["Margaret Ellis"],
                    pages=[f"<html><body>{_paragraphs(40)}{fact}</body></html>"])
    samples, stats = build_samples([alone], WordCounter(), BuildSettings(max_words=16, buckets=buckets))
    assert samples == [] and stats.dropped["over_length"] == 1
    assert "target page alone" in stats.examples["over_length"][0]


def test_every_bucket_variants_grow_with_the_bucket():
    fact = "<p>The keeper was Margaret Ellis for forty years.</p>"
    gold = f"<html><body>{_paragraphs(2, tag='g')}{fact}</body></html>"
    pages = [f"<html><body>{_paragraphs(n, tag=f'd{n}')}</body></html>" for n in (8, 16)]
    item = Example(id="v", question="Who was the keeper?", answers=["Margaret Ellis"], pages=[pages[0], gold, pages[1]])
    samples, stats = build_samples([item], WordCounter(), BuildSettings(max_words=16, buckets=(256, 512, 1024),
                                                                        variants="every_bucket"))
    assert [s["id"] for s in samples] == ["v-256", "v-512", "v-1k"]
    assert [s["pages"] for s in samples] == [1, 2, 3]
    assert [s["bucket"] for s in samples] == ["256", "512", "1k"]
    assert [s["tokens"] <= b for s, b in zip(samples, (256, 512, 1024))] == [True] * 3
    assert stats.to_dict((256, 512, 1024))["per_bucket"] == {"256": 1, "512": 1, "1k": 1}


def test_bad_settings_fail_early():
    for bad in ({"buckets": (4096, 2048)}, {"variants": "all"}, {"answer": "html"}, {"max_words": 0}):
        with pytest.raises(ValueError):
            BuildSettings(**bad)


def test_pages_are_cleaned_once_per_key():
    builder = SampleBuilder(WordCounter(), BuildSettings(max_words=16))
    calls = []

    def load():
        calls.append(1)
        return page(0, "The mill was built by Anna Berg.")

    for i in range(3):
        builder.build(f"i{i}", "Who built the mill?", ["Anna Berg"], [], page_keys=["p0"], loaders=[load])
    assert len(calls) == 1 and builder.stats.samples == 3


@pytest.mark.shared_data
def test_wtq_demo_set(tmp_path):
    """A demo set from the real WTQ-HTML pages: buckets, coverage and drops add up; files in the released layout."""
    root = shared_path("wtq-html-qa")
    from htmlrag_bench.training.build_data import main

    assert main(["--wtq", str(root), "--out", str(tmp_path), "--limit", "40", "--no-progress"]) == 0
    report = json.loads((tmp_path / "stats.json").read_text())
    assert report["items"] == 40
    assert sum(report["per_bucket"].values()) == report["samples"] == report["items_with_sample"]
    assert report["items_with_sample"] + sum(report["dropped"].values()) == 40
    assert report["label_coverage"] >= 0.9  # WTQ answers are cells of the question's own page
    assert report["truncated_samples"] > 0  # five Wikipedia pages rarely fit 32K tokens
    rows = [json.loads(line) for f in sorted(tmp_path.glob("wtq-html-qa-*.jsonl")) for line in f.open()]
    assert len(rows) == report["samples"]
    for row in rows:
        assert row["messages"][1]["content"].startswith(row["target_path"])
        assert row["tokens"] <= int(row["bucket"].removesuffix("k")) * 1024
