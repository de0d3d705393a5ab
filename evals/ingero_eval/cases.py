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
    """A database, a question, required facts, forbidden claims, rationale.

    A comparison case ("did the fix work?") also names a baseline run
    (`base` or `base_demo`): its investigation follows the `compare_runs`
    prompt on the baseline and the case's database, the run after the fix.
    """

    id: str
    file: Path
    db: Path | None
    demo: str | None
    question: str
    rationale: str
    must: list[Fact]
    must_not: list[Fact]
    base: Path | None = None
    base_demo: str | None = None

    @property
    def db_name(self) -> str:
        """File name of the case's database inside the served folder."""
        return _served(self.db, self.demo)

    @property
    def base_name(self) -> str | None:
        """File name of the baseline run inside the served folder, if any."""
        if self.base is None and self.base_demo is None:
            return None
        return _served(self.base, self.base_demo)


def _served(db: Path | None, demo: str | None) -> str:
    if demo:
        return f"demo-{demo}.db"
    assert db is not None
    return served_name(db)


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
    base, base_demo = raw.get("base"), raw.get("base_demo")
    if base and base_demo:
        raise CaseError(f"{where}: give at most one of `base` and `base_demo`")
    if base_demo and base_demo not in DEMOS:
        raise CaseError(f"{where}: unknown demo {base_demo!r}")
    if (base_demo and base_demo == demo) or (base and db and Path(base).name == Path(db).name):
        raise CaseError(f"{where}: the baseline and the run must be different files")
    for key in ("question", "rationale"):
        if not raw.get(key):
            raise CaseError(f"{where}: `{key}` is required")
    must = [_fact(f, f"{where} must[{i}]") for i, f in enumerate(raw.get("must", []))]
    must_not = [_fact(f, f"{where} must_not[{i}]") for i, f in enumerate(raw.get("must_not", []))]
    if not must:
        raise CaseError(f"{where}: at least one `must` fact")
    for f in must + must_not:
        on = f.params.get("on")
        if on is not None and (f.check != "sql" or on not in ("base", "new") or not (base or base_demo)):
            raise CaseError(f"{where}: `on` (\"base\" or \"new\") is for sql facts of a case with a baseline")
    return Case(
        id=raw.get("id", path.stem),
        file=path,
        db=(repo / db) if db else None,
        demo=demo,
        question=raw["question"],
        rationale=raw["rationale"].strip(),
        must=must,
        must_not=must_not,
        base=(repo / base) if base else None,
        base_demo=base_demo,
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
