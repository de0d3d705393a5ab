"""Loading and validating evaluation cases (``evals/cases/*.toml``)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .packed import served_name

CHECKS = {"equals", "near", "contains", "count", "max_by", "culprit_role", "sql"}
DEMOS = {"dataloader-starvation", "cpu-contention", "pageable-memcpy", "periodic-malloc-spike", "cold-start"}


class CaseError(ValueError):
    """A case file that cannot be used as written."""


@dataclass
class Fact:
    """One fact a correct answer must carry (or, when forbidden, must not).

    The tool-side check (`check`, `tool`, `path` and its parameters) says
    where in which tool output the fact lives; the answer-side spec
    (`say_any`, `say_all`, `say_number`) says how a model's prose shows it.
    """

    text: str
    check: str
    tool: str
    params: dict[str, Any]
    say_any: list[str] = field(default_factory=list)
    say_all: list[str] = field(default_factory=list)
    say_number: dict[str, Any] | None = None


@dataclass
class Case:
    """A database, a question, required facts, forbidden claims, rationale."""

    id: str
    file: Path
    db: Path | None
    demo: str | None
    question: str
    rationale: str
    must: list[Fact]
    must_not: list[Fact]

    @property
    def db_name(self) -> str:
        """File name of the case's database inside the served folder."""
        if self.demo:
            return f"demo-{self.demo}.db"
        assert self.db is not None
        return served_name(self.db)


def _fact(raw: dict[str, Any], where: str) -> Fact:
    raw = dict(raw)
    text = raw.pop("fact", None)
    check = raw.pop("check", None)
    if not text or check not in CHECKS:
        raise CaseError(f"{where}: needs `fact` and a `check` among {sorted(CHECKS)}")
    tool = raw.pop("tool", "run_sql" if check == "sql" else "get_causal_chains")
    say_any = raw.pop("say_any", [])
    say_all = raw.pop("say_all", [])
    say_number = raw.pop("say_number", None)
    if say_number is not None and not {"value", "unit"} <= set(say_number):
        raise CaseError(f"{where}: say_number needs value and unit")
    need = {
        "equals": {"path", "expect"},
        "near": {"path", "value"},
        "contains": {"path", "any"},
        "count": {"path"},
        "max_by": {"path", "key", "field", "expect"},
        "culprit_role": {"cause", "role"},
        "sql": {"sql", "value"},
    }[check]
    missing = need - set(raw)
    if missing:
        raise CaseError(f"{where}: check {check} needs {sorted(missing)}")
    return Fact(text, check, tool, raw, say_any, say_all, say_number)


def load_case(path: Path, repo: Path) -> Case:
    """Parses one case file; paths of databases are relative to `repo`."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise CaseError(f"{path}: {e}") from e
    where = path.name
    db, demo = raw.get("db"), raw.get("demo")
    if bool(db) == bool(demo):
        raise CaseError(f"{where}: give exactly one of `db` and `demo`")
    if demo and demo not in DEMOS:
        raise CaseError(f"{where}: unknown demo {demo!r}")
    for key in ("question", "rationale"):
        if not raw.get(key):
            raise CaseError(f"{where}: `{key}` is required")
    must = [_fact(f, f"{where} must[{i}]") for i, f in enumerate(raw.get("must", []))]
    must_not = [_fact(f, f"{where} must_not[{i}]") for i, f in enumerate(raw.get("must_not", []))]
    if not must:
        raise CaseError(f"{where}: at least one `must` fact")
    return Case(
        id=raw.get("id", path.stem),
        file=path,
        db=(repo / db) if db else None,
        demo=demo,
        question=raw["question"],
        rationale=raw["rationale"].strip(),
        must=must,
        must_not=must_not,
    )


def load_cases(folder: Path, repo: Path, only: list[str] | None = None) -> list[Case]:
    """Every case in `folder`, sorted by id, optionally only those named."""
    cases = [load_case(p, repo) for p in sorted(folder.glob("*.toml"))]
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise CaseError(f"duplicate case ids: {sorted(dupes)}")
    if only:
        unknown = set(only) - set(ids)
        if unknown:
            raise CaseError(f"no such case: {sorted(unknown)}")
        cases = [c for c in cases if c.id in only]
    return cases
