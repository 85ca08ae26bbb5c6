"""The budget split (harness/split.py): the cheap paths check every fuzzed example, each
compiling family a share of them, chosen so each family gets about the same part of the time."""

from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import fuzz
from harness.results import CampaignResult
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term
from harness.split import BudgetSplit, compiling_family

SPEC = GraphSpec(leaves=(LeafSpec(),), functions=(
    FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0, "sin"),)),), save=("inputs",)),))


def _paths(*names):
    return [paths.get(n) for n in names]


def _names(chosen):
    return [p.name for p in chosen[0]], chosen[1]


def test_the_families():
    assert [compiling_family(p) for p in _paths("eager", "owned", "borrowed", "func.grad", "compiled:eager",
                                                "dynamo", "func.grad+dynamo", "compiled@cuda")] == [
        None, None, None, None, "compiled autograd", "torch.compile", "torch.func + torch.compile",
        "compiled autograd"]


def test_the_family_furthest_behind_runs_while_not_ahead_of_the_cheap_paths():
    split = BudgetSplit(_paths("eager", "owned", "compiled", "dynamo"))
    assert split.splits
    assert _names(split.paths_for(SPEC)) == (["eager", "owned", "compiled"], "compiled autograd")
    split.charge("compiled autograd", 1.0)  # no cheap-only example measured yet: all of it is compiled's
    assert split.spent == {"compiled autograd": 1.0, "torch.compile": 0.0} and split.spent_cheap == 0.0
    assert _names(split.paths_for(SPEC)) == (["eager", "owned", "dynamo"], "torch.compile")
    split.charge("torch.compile", 2.0)
    # both ahead of the cheap paths: cheap examples until those catch up
    assert _names(split.paths_for(SPEC)) == (["eager", "owned"], None)
    split.charge(None, 0.5)
    split.charge(None, 0.5)
    assert split.cheap_average == 0.5 and split.spent_cheap == 1.0
    # compiled is no longer ahead; of its 1.5 s the cheap paths' average is theirs
    assert _names(split.paths_for(SPEC)) == (["eager", "owned", "compiled"], "compiled autograd")
    split.charge("compiled autograd", 1.5)
    assert split.spent["compiled autograd"] == 2.0 and split.spent_cheap == 1.5


def test_a_family_that_cannot_run_the_example_does_not_take_its_turn():
    split = BudgetSplit(_paths("eager", "compiled", "dynamo"))
    no_backward = GraphSpec(leaves=SPEC.leaves, functions=SPEC.functions, backward="none")
    assert _names(split.paths_for(no_backward)) == (["eager", "dynamo"], "torch.compile")
    split.charge("torch.compile", 1.0)
    assert _names(split.paths_for(no_backward)) == (["eager"], None)  # compiled autograd would be unsupported
    assert _names(split.paths_for(SPEC)) == (["eager", "compiled"], "compiled autograd")


def test_every_path_runs_everywhere_when_asked_or_when_there_is_nothing_to_split():
    for split in (BudgetSplit(_paths("eager", "compiled"), every_path=True), BudgetSplit(_paths("eager", "owned")),
                  BudgetSplit(_paths("compiled", "dynamo"))):
        assert not split.splits
        chosen = split.paths_for(SPEC)
        assert chosen == (split.paths, None)


def test_a_campaign_counts_each_paths_examples_and_the_split():
    records = []
    fuzz(_paths("eager", "owned", "compiled:eager"), until=float("inf"), device="cpu",
         database=InMemoryExampleDatabase(), lifetimes=False, on_record=records.append, known=set(), max_examples=40)
    examples = [r for r in records if r["kind"] == "example"]
    assert len(examples) == 40 and all("family" in r for r in examples)
    with_compiled = [r for r in examples if "compiled:eager" in r["outcomes"]]
    assert all(r["family"] == "compiled autograd" for r in with_compiled)
    assert 0 < len(with_compiled) < 40
    result = CampaignResult(["eager", "owned", "compiled:eager"], "cpu")
    for r in records:
        result.add_record(r)
    summary = result.as_json()
    assert summary["paths"]["eager"]["examples"] == summary["paths"]["owned"]["examples"] == 40
    assert summary["paths"]["compiled:eager"]["examples"] == len(with_compiled)
    assert summary["split"]["compiled autograd"]["examples"] == len(with_compiled)
    assert summary["split"]["cheap paths only"]["examples"] == 40 - len(with_compiled)
    assert "budget split" in result.summary()
    again = CampaignResult.from_json(summary).split  # from the summary's rounded seconds
    assert {f: (n, round(s, 3)) for f, (n, s) in again.items()} == {f: (n, round(s, 3)) for f, (n, s) in result.split.items()}


def test_every_path_through_the_command_line(tmp_path):
    """`fuzz --every-path` as the README shows it: every path runs every fuzzed example, no split."""
    import json
    import subprocess
    import sys

    out = tmp_path / "s.json"
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager,compiled:eager", "--every-path",
                           "--no-seeds", "--max-examples", "6", "--budget", "300s", "--json", str(out),
                           "--out", str(tmp_path / "c")], capture_output=True, text=True, timeout=600)
    # 3 (nothing checked on a path) is a true verdict here: six examples can all be unsupported or
    # stopped by known issues on compiled autograd (seen in CI); what this test asks is that the path ran them
    assert done.returncode in (0, 1, 3), done.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert "split" not in summary and "budget split" not in done.stdout
    assert summary["paths"]["eager"]["checked"] > 0
    assert summary["paths"]["compiled:eager"]["examples"] == summary["paths"]["eager"]["examples"] == summary["examples"] > 0
