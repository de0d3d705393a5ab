#!/usr/bin/env python3
"""Self-test of the evaluation harness: the path language, answer grading,
case validation, and (with --bin) that a wrong case fails with a message
naming the missing fact and the tool output that should have carried it,
and every model-mode path against a scripted stand-in model.

Usage: test_harness.py [--bin PATH_TO_INGERO]
Without --bin the tests that need the server are skipped, unless
INGERO_MCP_E2E=require, where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingero_eval.answer import grade, grounded, quantities, says_number, stated_rank  # noqa: E402
from ingero_eval.cases import CaseError, Fact, load_case  # noqa: E402
from ingero_eval.facts import check  # noqa: E402
from ingero_eval.paths import PathError, resolve  # noqa: E402
from ingero_eval.scripted import ScriptedModel  # noqa: E402

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

    def test_a_denial_is_no_claim(self) -> None:
        ans = "Pageable host memory behind 40 copies is the cause. This is not CPU contention; use pin_memory."
        must = [Fact("pageable", "equals", "get_causal_chains", {"path": "x", "expect": "pageable_memcpy"})]
        nots = [Fact("cpu", "equals", "get_causal_chains", {"path": "x", "expect": "cpu_contention"})]
        rows = grade(must, nots, ans)
        self.assertTrue(all(r["passed"] for r in rows), rows)
        rows = grade(must, nots, "The cause is CPU contention from stress-ng, not pageable memory.")
        self.assertFalse(rows[0]["passed"], rows)
        self.assertFalse(rows[1]["passed"], rows)
        self.assertFalse(says_number("the p99 is not 42 ms", {"value": 42, "unit": "ms"}))
        self.assertTrue(says_number("not 5 ms but 42 ms", {"value": 42, "unit": "ms"}))

    def test_a_cause_counts_at_its_stated_rank(self) -> None:
        top = Fact("top", "equals", "get_causal_chains", {"path": "chains[0].cause", "expect": "host_input_pipeline"})
        some = Fact("any", "equals", "get_causal_chains", {"path": "chains[cause=host_input_pipeline].cause",
                                                          "expect": "host_input_pipeline"})
        second = "Main cause: CPU contention by other jobs. The input pipeline adds to it."
        self.assertEqual(stated_rank(top, second), 2)
        rows = grade([top, some], [], second)
        self.assertEqual([r["passed"] for r in rows], [False, True], rows)
        first = "Before the first call (start-up) 12 s. Main cause: the input pipeline; CPU contention adds to it."
        self.assertEqual(stated_rank(top, first), 1)

    def test_no_tool_call_scores_zero_and_figures_need_a_tool_result(self) -> None:
        idle = Fact("idle", "near", "get_causal_chains", {"path": "x", "value": 0.992},
                    say_number={"value": 99.2, "unit": "%", "rel_tol": 0.005})
        nots = [Fact("cpu", "equals", "get_causal_chains", {"path": "x", "expect": "cpu_contention"})]
        ans = "The GPU is idle 99.2% of the time."
        rows = grade([idle], nots, ans, [], 0)
        self.assertEqual([r["passed"] for r in rows], [False, False], rows)
        self.assertIn("no tool call", rows[0]["detail"])
        rows = grade([idle], nots, ans, ["ops: cudaMemcpy 12 calls"], 1)
        self.assertFalse(rows[0]["passed"], rows)
        self.assertIn("in no tool result", rows[0]["detail"])
        self.assertTrue(grade([idle], nots, ans, ['"idle_share": 0.9913'], 1)[0]["passed"])
        self.assertTrue(grounded({"value": 49.4, "unit": "s", "rel_tol": 0.03}, ['"host_compute_ns": 49380949730']))
        self.assertTrue(grounded({"value": 49.4, "unit": "s", "rel_tol": 0.03}, ["host compute 49.38 s"]))


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


def need_bin(test: unittest.TestCase) -> str:
    """The ingero binary; skips without one, fails instead under INGERO_MCP_E2E=require."""
    if BIN is None:
        if os.environ.get("INGERO_MCP_E2E") == "require":
            test.fail("needs --bin (INGERO_MCP_E2E=require)")
        test.skipTest("needs --bin")
    assert BIN is not None
    return BIN


class ComparisonCases(unittest.TestCase):
    def write(self, tmp: str, body: str) -> Path:
        p = Path(tmp) / "cmp.toml"
        p.write_text('question = "Did the fix work?"\nrationale = "r"\n' + body +
                     '[[must]]\nfact = "f"\ntool = "compare_runs"\ncheck = "equals"\npath = "verdict.outcome"\nexpect = "better"\n')
        return p

    def test_a_baseline_loads_and_names_its_served_file(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            case = load_case(self.write(tmp, 'demo = "periodic-malloc-spike"\nbase_demo = "dataloader-starvation"\n'), HERE.parent)
            self.assertEqual((case.base_name, case.db_name), ("demo-dataloader-starvation.db", "demo-periodic-malloc-spike.db"))
            case = load_case(self.write(tmp, 'demo = "cold-start"\n'), HERE.parent)
            self.assertIsNone(case.base_name)

    def test_rejects_bad_baselines(self) -> None:
        sql_on_base = '[[must]]\nfact = "s"\ncheck = "sql"\non = "base"\nsql = "SELECT 1"\nvalue = 1\n'
        for body in [
            'demo = "cold-start"\nbase_demo = "cold-start"\n',
            'demo = "cold-start"\nbase_demo = "nope"\n',
            'demo = "cold-start"\nbase_demo = "cpu-contention"\nbase = "x.db"\n',
            'demo = "cold-start"\n' + sql_on_base,
        ]:
            with tempfile.TemporaryDirectory() as tmp, self.assertRaises(CaseError, msg=body):
                load_case(self.write(tmp, body), HERE.parent)

    def test_a_demo_pair_follows_compare_runs(self) -> None:
        need_bin(self)
        with tempfile.TemporaryDirectory() as tmp:
            self.write(tmp, 'demo = "periodic-malloc-spike"\nbase_demo = "dataloader-starvation"\n'
                       '[[must]]\nfact = "workers removed"\ntool = "compare_runs"\ncheck = "equals"\n'
                       'path = "verdict.reduced"\nexpect = "dataloader_worker_contention"\n'
                       '[[must]]\nfact = "appended"\ncheck = "equals"\npath = "comparison.verdict.reduced"\n'
                       'expect = "dataloader_worker_contention"\n')
            out = subprocess.run([sys.executable, str(HERE / "run.py"), "--bin", BIN, "--cases", tmp, "--mode", "tool",
                                  "--json", "-"], capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        case = json.loads(out.stdout)["tool_mode"][0]
        self.assertEqual(case["steps"][0], "compare_runs")
        self.assertTrue(all(f["passed"] for f in case["facts"]), case["facts"])


class WrongCase(unittest.TestCase):
    def test_wrong_fact_fails_and_names_the_tool(self) -> None:
        need_bin(self)
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


SEED = "tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
SEED_NAME = "pytorch-dataloader-starvation.db"
CASE = """db = "{db}"
question = "Why is the GPU idle? {tag}"
rationale = "Seed facts, as in seed-why-idle; the tag picks the scripted model's turns."

[[must]]
fact = "Top cause is the host input pipeline"
check = "equals"
path = "chains[0].cause"
expect = "host_input_pipeline"

[[must]]
fact = "GPU idle about 99.2% of the main process's lifetime"
check = "near"
path = "gpu_idle[0].idle_share"
value = 0.992
abs_tol = 0.003
say_number = {{ value = 99.2, unit = "%", rel_tol = 0.005 }}

[[must]]
fact = "Host compute about 49.4 s"
check = "near"
path = "chains[cause=host_input_pipeline].evidence[label=host_compute].value"
value = 49.38e9
say_number = {{ value = 49.4, unit = "s", rel_tol = 0.03 }}

[[must_not]]
fact = "CPU contention as the top cause"
check = "equals"
path = "chains[0].cause"
expect = "cpu_contention"

[[must_not]]
fact = "cudaStreamSynchronize p99 of 42 ms"
check = "near"
tool = "get_trace_stats"
path = "ops[op=cudaStreamSynchronize].p99_ns"
value = 42e6
rel_tol = 0.1
say_all = ["cudaStreamSync"]
say_number = {{ value = 42, unit = "ms", rel_tol = 0.05 }}
"""
# What a careful answer says once it has read get_causal_chains.
RIGHT = ("The GPU is idle 99.1% of pid 2233's 94.62 s. Main cause: the host input pipeline: the GPU thread spends "
         "49.38 s on the CPU outside CUDA. It is not CPU contention, and the cudaStreamSynchronize p99 is not 42 ms.")
CHAINS = {"name": "get_causal_chains", "arguments": {"db": SEED_NAME}}
STATS = {"name": "get_trace_stats", "arguments": {"db": SEED_NAME}}
SCRIPTS = {
    "[invented]": [{"content": RIGHT}],
    "[grounded]": [{"tool_calls": [CHAINS]}, {"content": RIGHT}],
    "[ungrounded]": [{"tool_calls": [{"name": "list_databases", "arguments": {}}]}, {"content": RIGHT}],
    "[rank]": [{"tool_calls": [CHAINS]}, {"content": "Main cause: CPU contention by competing processes. "
                                                      "The input pipeline adds 49.38 s; the GPU is idle 99.1%."}],
    "[badtool]": [{"tool_calls": [{"name": "investigate", "arguments": {}}]}, {"tool_calls": [CHAINS]}, {"content": RIGHT}],
    "[loop]": [{"tool_calls": [STATS]}],
    "[slow]": [{"delay": 5, "content": RIGHT}],
}


class ScriptedModelMode(unittest.TestCase):
    """Model mode end to end against `ingero mcp` and the scripted model."""

    def run_model_mode(self, tags: list[str], *extra: str) -> tuple[dict, ScriptedModel]:
        binary = need_bin(self)
        with tempfile.TemporaryDirectory() as tmp, ScriptedModel(SCRIPTS) as model:
            for i, tag in enumerate(tags):
                (Path(tmp) / f"s{i}-{tag.strip('[]')}.toml").write_text(CASE.format(db=SEED, tag=tag))
            report = Path(tmp) / "report.json"
            env = {**os.environ, "INGERO_EVAL_OPENAI_BASE_URL": model.url, "INGERO_EVAL_MODEL": "scripted"}
            env.pop("INGERO_EVAL_OLLAMA_URL", None)
            out = subprocess.run([sys.executable, str(HERE / "run.py"), "--bin", binary, "--cases", tmp, "--mode", "model",
                                  "--max-turns", "3", "--json", str(report), *extra],
                                 capture_output=True, text=True, timeout=600, env=env)
            self.assertIn(out.returncode, (0, 1), out.stdout + out.stderr)
            doc = json.loads(report.read_text())
        return {c["question"].split()[-1]: c for c in doc["model_mode"]["cases"]}, model

    @staticmethod
    def passed(case: dict) -> list[bool]:
        return [f["passed"] for f in case["facts"]]

    def test_every_graded_path(self) -> None:
        cases, model = self.run_model_mode(["[invented]", "[grounded]", "[ungrounded]", "[rank]", "[badtool]", "[loop]"],
                                           "--max-tokens", "321")
        invented = cases["[invented]"]
        self.assertEqual(invented["calls"], [])
        self.assertEqual(self.passed(invented), [False] * 5, invented)
        self.assertTrue(all("no tool call" in f["detail"] for f in invented["facts"]), invented)

        grounded_case = cases["[grounded]"]
        self.assertEqual(self.passed(grounded_case), [True] * 5, grounded_case["facts"])
        self.assertEqual(grounded_case["calls"][0]["name"], "get_causal_chains")
        self.assertEqual(grounded_case["calls"][0]["arguments"], {"db": SEED_NAME})

        ungrounded = cases["[ungrounded]"]
        self.assertEqual(self.passed(ungrounded), [True, False, False, True, True], ungrounded["facts"])
        self.assertIn("in no tool result", ungrounded["facts"][1]["detail"])

        rank = cases["[rank]"]
        self.assertEqual(self.passed(rank), [False, True, True, False, True], rank["facts"])
        self.assertIn("rank 2", rank["facts"][0]["detail"])

        bad = cases["[badtool]"]
        self.assertIsNone(bad["error"], bad)
        self.assertEqual([c["name"] for c in bad["calls"]], ["investigate", "get_causal_chains"])
        self.assertIn("unknown tool 'investigate'", bad["calls"][0]["error"])
        self.assertEqual(self.passed(bad), [True] * 5, bad["facts"])

        loop = cases["[loop]"]
        self.assertEqual(loop["error"], "no final answer after 3 turns")
        self.assertEqual(len(loop["calls"]), 3)
        self.assertEqual(self.passed(loop), [False] * 5, loop)

        self.assertTrue(model.requests)
        self.assertTrue(all(r.get("max_tokens") == 321 for r in model.requests), [r.get("max_tokens") for r in model.requests])
        sent = [m["content"] for r in model.requests for m in r["messages"] if m.get("role") == "tool"]
        self.assertTrue(any(t.split("\n", 1)[-1].startswith("pid 2233 (python3): GPU idle") for t in sent), [t[:80] for t in sent])
        self.assertTrue(any(t.startswith("error: unknown tool 'investigate'") for t in sent))

    def test_truncation_is_marked_and_json_content_selectable(self) -> None:
        cases, model = self.run_model_mode(["[grounded]"], "--tool-content", "json", "--max-tool-chars", "300")
        call = cases["[grounded]"]["calls"][0]
        self.assertTrue(call["truncated"], call)
        self.assertGreater(call["chars"], 300)
        sent = [m["content"] for r in model.requests for m in r["messages"] if m.get("role") == "tool"]
        self.assertTrue(sent and sent[0].startswith('{"headline"'), sent[:1])
        self.assertIn("[truncated: 300 of", sent[0])

    def test_one_time_budget_per_case(self) -> None:
        cases, _ = self.run_model_mode(["[slow]"], "--case-budget", "1")
        slow = cases["[slow]"]
        self.assertIn("time budget of 1 s", slow["error"] or "", slow)
        self.assertEqual(self.passed(slow), [False] * 5, slow)


if __name__ == "__main__":
    if "--bin" in sys.argv:
        i = sys.argv.index("--bin")
        BIN = sys.argv[i + 1]
        del sys.argv[i : i + 2]
    unittest.main(verbosity=1)
