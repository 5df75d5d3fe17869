"""B8: retrieval quality of the local engine on conversational memory (LoCoMo format).

Every dialog turn of every conversation is stored as one document
(``"<speaker>: <text>"``, with the session as ``thread_id``, the turn's place
as ``turns`` and the session's date as ``observed_at``, as a chat app would
store messages), each in its conversation's workspace. Every question of
categories 1-4 (5 is adversarial: skipped) is then asked of its
conversation only (a workspace filter):

- **evidence recall@k** (k = 5, 10): the share of questions with a gold
  evidence turn among the top k hits, for each fetch mode (keyword, vector,
  hybrid), and for one raw SQLite FTS5 query in the same run as the
  baseline: a ``porter unicode61`` FTS5 table of the same texts, the
  question's words quoted and OR-ed, ``ORDER BY rank LIMIT k``;
- **answer contains the gold**: the share of questions whose ``recall``
  answer (limit 5) contains the gold answer (lowercased, punctuation as
  spaces).

Each embedder configuration is measured: ``ngram`` (the built-in character
n-gram embedder, pure-Python vector search: the core install), ``ngram +
numpy`` (the same vectors searched with NumPy, when importable) and
``semantic`` (the ``[semantic]`` extra, when installed).

Aims, for both the core configuration (``ngram``, what every install has)
and ``semantic``: hybrid recall@k ≥ the better of keyword and vector at k =
5 and 10 (fusion never loses), answer contains the gold ≥ 0.5; hybrid
recall@10 ≥ FTS5 recall@10 (core) and ≥ FTS5 + 0.10 (semantic). The +0.10
margin is asked of the semantic configuration only: four questions in ten
of the default dataset are paraphrases or synonyms that share no content
word with their evidence, which no lexical method (the core's or FTS5's)
can find; a run without the extra installed cannot check it and misses.

The dataset defaults to ``bench/data/b8_memory.json`` (written for this
project, see ``bench/data/README.md``); ``--dataset PATH`` takes any file in
the published LoCoMo JSON format. Figures are also split into two halves of
the samples (``dev``: even positions, ``test``: odd), because the engine's
few fixed weights were chosen looking at ``dev`` only.

Run: ``python bench/b8_retrieval.py [--dataset PATH] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import print_table, summary, write_result

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    MemoryMeta,
    MetaFilter,
    RecallRequest,
    StoreItem,
    TurnRange,
)
from cortex_memory.errors import ConfigError
from cortex_memory.local import LocalEngine

DEFAULT_DATASET = Path(__file__).resolve().parent / "data" / "b8_memory.json"
KS = (5, 10)
#: The margin the semantic configuration's hybrid recall@10 keeps over raw FTS5.
MARGIN = 0.10
#: The share of recall answers that must contain the gold answer.
ANSWER_AIM = 0.5

_WORD = re.compile(r"[^\W_]+")
_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE
)
_MONTHS = {
    name: n
    for n, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"), start=1,
    )
}  # fmt: skip


@dataclass(frozen=True)
class Turn:
    """One dialog turn as stored."""

    dia_id: str
    text: str
    thread: str
    position: int
    at: Optional[datetime]


@dataclass(frozen=True)
class Question:
    """One scored question."""

    sample: str
    index: int
    text: str
    answer: str
    evidence: Tuple[str, ...]
    category: int


@dataclass
class Sample:
    """One conversation: its turns and its questions."""

    id: str
    turns: List[Turn] = field(default_factory=list)
    questions: List[Question] = field(default_factory=list)


def _date(text: object) -> Optional[datetime]:
    match = _DATE.search(str(text or ""))
    if match is None:
        return None
    hour, minute, half, day, month, year = match.groups()
    month_no = _MONTHS.get(month.lower())
    if month_no is None:
        return None
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    try:
        return datetime(int(year), month_no, int(day), h, int(minute), tzinfo=timezone.utc)
    except ValueError:
        return None


def load(path: Path) -> List[Sample]:
    """The samples of a LoCoMo-format file (category 5 and evidence-less questions left out)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    samples: List[Sample] = []
    for position, entry in enumerate(raw):
        conversation = entry["conversation"]
        sample = Sample(str(entry.get("sample_id", f"sample-{position}")))
        sessions = sorted(
            (int(key.split("_")[1]), key)
            for key, value in conversation.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
        )
        for number, key in sessions:
            at = _date(conversation.get(f"{key}_date_time"))
            for place, turn in enumerate(conversation[key]):
                text = str(turn.get("text", "")).strip()
                if not text:
                    continue
                sample.turns.append(Turn(
                    str(turn["dia_id"]), f"{turn['speaker']}: {text}",
                    f"{sample.id}/session_{number}", place, at,
                ))  # fmt: skip
        known = {turn.dia_id for turn in sample.turns}
        for index, qa in enumerate(entry.get("qa", [])):
            category = int(qa.get("category", 0))
            if category == 5 or "answer" not in qa:
                continue
            evidence = tuple(
                part for item in qa.get("evidence", []) for part in re.split(r"[;,\s]+", item)
                if part in known
            )  # fmt: skip
            if not evidence:
                continue
            sample.questions.append(Question(
                sample.id, index, str(qa["question"]), str(qa["answer"]), evidence, category,
            ))  # fmt: skip
        samples.append(sample)
    return samples


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def contains_gold(answer: str, gold: str) -> bool:
    """True when the answer holds the gold answer (case and punctuation aside)."""
    want = _normal(gold)
    return bool(want) and f" {want} " in f" {_normal(answer)} "


def _fts_baseline(sample: Sample) -> Dict[int, List[List[str]]]:
    """Per question index, the raw FTS5 top-k dia ids for each k."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
    conn.executemany(
        "INSERT INTO t (rowid, text) VALUES (?, ?)",
        [(n + 1, turn.text) for n, turn in enumerate(sample.turns)],
    )
    out: Dict[int, List[List[str]]] = {}
    for q in sample.questions:
        words = list(dict.fromkeys(_WORD.findall(q.text.lower())))
        if not words:
            out[q.index] = [[] for _ in KS]
            continue
        expression = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (expression, max(KS))
        ).fetchall()
        ids = [sample.turns[row[0] - 1].dia_id for row in rows]
        out[q.index] = [ids[:k] for k in KS]
    conn.close()
    return out


def _store(engine: LocalEngine, sample: Sample) -> Dict[str, str]:
    """Store the sample's turns; item id -> dia id."""
    items = [
        StoreItem.document(
            turn.text,
            MemoryMeta(
                workspace=sample.id,
                thread_id=turn.thread,
                turns=TurnRange(turn.position, turn.position),
                observed_at=turn.at,
            ),
        )
        for turn in sample.turns
    ]
    by_id: Dict[str, str] = {}
    for start in range(0, len(items), 100):
        receipts = engine.store_many(items[start : start + 100])
        for receipt, turn in zip(receipts, sample.turns[start : start + 100]):
            by_id[receipt.id] = turn.dia_id
    return by_id


@dataclass
class Tally:
    """Hits per mode and k, answers containing the gold, questions."""

    hits: Dict[str, List[int]] = field(default_factory=dict)
    answers: int = 0
    questions: int = 0

    def add(self, other: Tally) -> None:
        for key, values in other.hits.items():
            mine = self.hits.setdefault(key, [0] * len(KS))
            for i, value in enumerate(values):
                mine[i] += value
        self.answers += other.answers
        self.questions += other.questions

    def rate(self, key: str, k: int) -> float:
        return self.hits.get(key, [0] * len(KS))[KS.index(k)] / max(self.questions, 1)

    def answer_rate(self) -> float:
        return self.answers / max(self.questions, 1)


def _evaluate(
    sample: Sample, config: Dict[str, Any], baseline: Dict[int, List[List[str]]],
    styles: Dict[str, str], by_style: Dict[str, Tally],
) -> Tally:
    tally = Tally()
    with LocalEngine(":memory:", **config) as engine:
        by_id = _store(engine, sample)
        flt = MetaFilter(workspace=sample.id)
        for q in sample.questions:
            one = Tally(questions=1)
            gold = set(q.evidence)
            for mode in FetchMode:
                page = engine.fetch(FetchRequest(q.text, mode, max(KS), flt))
                ids = [by_id.get(hit.id, "") for hit in page.hits]
                one.hits[mode.value] = [int(bool(gold & set(ids[:k]))) for k in KS]
            one.hits["fts5"] = [int(bool(gold & set(top))) for top in baseline[q.index]]
            reply = engine.recall(RecallRequest(q.text, 5, flt))
            one.answers = int(contains_gold(reply.answer, q.answer))
            tally.add(one)
            style = styles.get(f"{q.sample}#{q.index}")
            if style:
                by_style.setdefault(style, Tally()).add(one)
    return tally


def _configs() -> List[Tuple[str, Dict[str, Any]]]:
    configs: List[Tuple[str, Dict[str, Any]]] = [("ngram", {"vector_backend": "python"})]
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    else:
        configs.append(("ngram + numpy", {"vector_backend": "numpy"}))
    try:
        from cortex_memory.local.semantic import static_embedder

        configs.append(("semantic", {"embedder": static_embedder()}))
    except ConfigError:
        pass
    return configs


def _aims(name: str, tally: Tally, margin: float) -> List[str]:
    """The aims this configuration misses (empty: all reached)."""
    misses: List[str] = []
    fts10, hybrid10 = tally.rate("fts5", 10), tally.rate("hybrid", 10)
    if hybrid10 < fts10 + margin:
        misses.append(f"{name}: hybrid@10 {hybrid10:.3f} < FTS5 {fts10:.3f} + {margin}")
    for k in KS:
        best = max(tally.rate("keyword", k), tally.rate("vector", k))
        if tally.rate("hybrid", k) < best:
            misses.append(
                f"{name}: hybrid@{k} {tally.rate('hybrid', k):.3f} < best part {best:.3f}"
            )
    if tally.answer_rate() < ANSWER_AIM:
        misses.append(f"{name}: answers {tally.answer_rate():.3f} < {ANSWER_AIM}")
    return misses


def main(argv: Sequence[str]) -> int:
    """Load, store, ask, score; print and save the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--quick", action="store_true", help="the first two samples only")
    args = parser.parse_args(argv)
    samples = load(args.dataset)
    if args.quick:
        samples = samples[:2]
    styles_path = args.dataset.with_name(args.dataset.stem + ".styles.json")
    styles: Dict[str, str] = (
        json.loads(styles_path.read_text(encoding="utf-8")) if styles_path.exists() else {}
    )
    began = time.perf_counter()
    baselines = {s.id: _fts_baseline(s) for s in samples}
    results: Dict[str, Any] = {}
    rows = []
    misses: List[str] = []
    margins = {"ngram": 0.0, "semantic": MARGIN}
    for name, config in _configs():
        total, dev, test = Tally(), Tally(), Tally()
        by_style: Dict[str, Tally] = {}
        for position, sample in enumerate(samples):
            tally = _evaluate(sample, config, baselines[sample.id], styles, by_style)
            total.add(tally)
            (dev if position % 2 == 0 else test).add(tally)
        if name in margins:
            misses.extend(_aims(name, total, margins[name]))
        results[name] = {
            split: {
                "questions": t.questions,
                "recall": {m: {str(k): round(t.rate(m, k), 4) for k in KS}
                           for m in ("fts5", "keyword", "vector", "hybrid")},
                "answer_contains_gold": round(t.answer_rate(), 4),
            }
            for split, t in (("all", total), ("dev", dev), ("test", test))
        }  # fmt: skip
        results[name]["by_style"] = {
            style: {"questions": t.questions, "hybrid@10": round(t.rate("hybrid", 10), 4),
                    "fts5@10": round(t.rate("fts5", 10), 4),
                    "answers": round(t.answer_rate(), 4)}
            for style, t in sorted(by_style.items())
        }  # fmt: skip
        for split, t in (("all", total), ("dev", dev), ("test", test)):
            rows.append((
                name, split, t.questions,
                *(f"{t.rate(m, k):.3f}" for m in ("fts5", "keyword", "vector", "hybrid")
                  for k in KS),
                f"{t.answer_rate():.3f}",
            ))  # fmt: skip
    headers = ["config", "split", "questions"] + [
        f"{m}@{k}" for m in ("fts5", "keyword", "vector", "hybrid") for k in KS
    ] + ["answer"]
    print_table(f"B8 retrieval quality ({args.dataset.name})", headers, rows)
    for name in results:
        styled = results[name]["by_style"]
        if styled:
            print(f"{name} by style (hybrid@10 / fts5@10 / answers): " + ", ".join(
                f"{s} {v['hybrid@10']:.2f}/{v['fts5@10']:.2f}/{v['answers']:.2f} "
                f"(n={v['questions']})"
                for s, v in styled.items()
            ))  # fmt: skip
    core = results["ngram"]["all"]
    figure = (
        f"hybrid@10 {core['recall']['hybrid']['10']:.3f} vs FTS5 "
        f"{core['recall']['fts5']['10']:.3f}; answers {core['answer_contains_gold']:.3f}"
    )
    if "semantic" in results:
        sem = results["semantic"]["all"]
        figure += (
            f"; semantic hybrid@10 {sem['recall']['hybrid']['10']:.3f}, "
            f"answers {sem['answer_contains_gold']:.3f}"
        )
    else:
        misses.append("semantic: the [semantic] extra is not installed; its aims are unchecked")
    aim = (
        f"hybrid@10 >= FTS5 (core), >= FTS5 + {MARGIN} (semantic); >= its parts; "
        f"answers >= {ANSWER_AIM}"
    )
    row = summary(figure, aim, "miss" if misses else "pass",
                  detail="; ".join(misses) if misses else None)  # fmt: skip
    path = write_result("b8_retrieval", {
        "dataset": str(args.dataset), "samples": len(samples),
        "seconds": round(time.perf_counter() - began, 1), "results": results,
        "misses": misses, "summary": row,
    })  # fmt: skip
    for miss in misses:
        print(f"miss: {miss}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
