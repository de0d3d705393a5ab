#!/usr/bin/env python3
"""Self-test of the evaluation harness: the path language, answer grading,
case validation, and (with --bin) that a wrong case fails with a message
naming the missing fact and the tool output that should have carried it.

Usage: test_harness.py [--bin PATH_TO_INGERO]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingero_eval.answer import grade, quantities, root_cause_section, says_number  # noqa: E402
from ingero_eval.cases import CaseError, Fact, load_case  # noqa: E402
from ingero_eval.facts import check  # noqa: E402
from ingero_eval.paths import PathError, resolve  # noqa: E402

BIN: str | None = None
DOC = {
    "chains": [
        {"cause": "pageable_memcpy", "culprit_pids": [7], "evidence": [{"label": "large_copies", "value": 40.0}]},
        {"cause": "cold_start", "culprit_pids": [7], "evidence": []},
    ],
    "processes": [{"pid": 7, "role": "main"}, {"pid": 8, "role": "dataloader_worker"}],
}


class Paths(unittest.TestCase):
    def test_index_selector_and_filter(self) -> None:
        self.assertEqual(resolve(DOC, "chains[0].cause"), "pageable_memcpy")
        self.assertEqual(resolve(DOC, "chains[cause=pageable_memcpy].evidence[label=large_copies].value"), 40.0)
        self.assertEqual(len(resolve(DOC, "processes[*role=dataloader_worker]")), 1)
        self.assertEqual(resolve(DOC, "processes[*role=external]"), [])

    def test_missing(self) -> None:
        for bad in ["chains[5].cause", "chains[cause=cpu_contention]", "nope", "chains[0].nope"]:
            with self.assertRaises(PathError):
                resolve(DOC, bad)


class Facts(unittest.TestCase):
    def test_equals_near_and_missing_tool(self) -> None:
        out = {"get_causal_chains": DOC, "get_per_process_breakdown": DOC}
        eq = Fact("top", "equals", "get_causal_chains", {"path": "chains[0].cause", "expect": "pageable_memcpy"})
        self.assertTrue(check(eq, out).carried)
        near = Fact("n", "near", "get_causal_chains", {"path": "chains[0].evidence[0].value", "value": 41, "rel_tol": 0.01})
        v = check(near, out)
        self.assertFalse(v.carried)
        self.assertIn("want 41", v.detail)
        role = Fact("r", "culprit_role", "get_causal_chains", {"cause": "pageable_memcpy", "role": "main"})
        self.assertTrue(check(role, out).carried)
        self.assertFalse(check(eq, {}).carried)


class Answers(unittest.TestCase):
    def test_quantities_in_base_units(self) -> None:
        q = dict((k, v) for k, v in quantities("idle 97.6% for 42.4 s at 7.3 GB/s, 1,796 switches"))
        self.assertAlmostEqual(q["percent"], 97.6)
        self.assertAlmostEqual(q["time"], 42.4)
        self.assertAlmostEqual(q["bandwidth"], 7.3e9)
        self.assertEqual(q["count"], 1796)
        self.assertTrue(says_number("p99 of 4.0 ms", {"value": 4.03, "unit": "ms"}))
        self.assertFalse(says_number("p99 of 4.0 ms", {"value": 4.0, "unit": "s"}))
        self.assertFalse(says_number("40 samples", {"value": 40, "unit": "s"}))

    def test_forbidden_only_in_root_cause(self) -> None:
        ans = "- **Root cause**: pageable host memory behind 40 copies.\n- **Fix**: not CPU contention; use pin_memory."
        self.assertIn("pageable", root_cause_section(ans))
        must = [Fact("pageable", "equals", "get_causal_chains", {"path": "x", "expect": "pageable_memcpy"})]
        nots = [Fact("cpu", "equals", "get_causal_chains", {"path": "x", "expect": "cpu_contention"})]
        rows = grade(must, nots, ans)
        self.assertTrue(all(r["passed"] for r in rows), rows)
        rows = grade(must, nots, "**Root cause**: CPU contention from stress-ng, not pageable memory.")
        self.assertFalse(rows[1]["passed"])


class CaseFiles(unittest.TestCase):
    def test_every_case_loads(self) -> None:
        for p in sorted((HERE / "cases").glob("*.toml")):
            load_case(p, HERE.parent)

    def test_rejects_bad_case(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "bad.toml"
            p.write_text('demo = "nope"\nquestion = "q"\nrationale = "r"\n')
            with self.assertRaises(CaseError):
                load_case(p, HERE.parent)


class WrongCase(unittest.TestCase):
    def test_wrong_fact_fails_and_names_the_tool(self) -> None:
        if BIN is None:
            self.skipTest("needs --bin")
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "wrong.toml").write_text(
                'demo = "cold-start"\nquestion = "Why?"\nrationale = "A deliberately wrong expectation."\n'
                '[[must]]\nfact = "Top cause is CPU contention"\ncheck = "equals"\n'
                'path = "chains[0].cause"\nexpect = "cpu_contention"\n'
            )
            out = subprocess.run([sys.executable, str(HERE / "run.py"), "--bin", BIN, "--cases", tmp, "--mode", "tool"],
                                 capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("missing: Top cause is CPU contention", out.stdout)
        self.assertIn("get_causal_chains.chains[0].cause: got 'cold_start'", out.stdout)


if __name__ == "__main__":
    if "--bin" in sys.argv:
        i = sys.argv.index("--bin")
        BIN = sys.argv[i + 1]
        del sys.argv[i : i + 2]
    unittest.main(verbosity=1)
