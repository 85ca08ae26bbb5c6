"""Causes: one bug is one cause, keyed by where it lives (the path family that shows it) and
what the difference looks like, so that two bugs with the same words on two path families are
two causes: each saved, shrunk and reported on its own, and told apart by `diff`.

The outcomes built by hand here check the grouping rules one by one; the real checks beside them
run real torch with two seeded faults of the same symptom: compiled autograd's x1.5 gradient
and Dynamo's traced backward's (harness/selfeval/compilers.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import paths, selfeval
from harness.check import PathOutcome, Verdict, check
from harness.oracles.compare import Mismatch
from harness.records import Cause, cause_of, causes_of, example_record, fingerprint, same_cause
from harness.report import diff, load, write_reports
from harness.results import CampaignResult, Failure
from harness.shrink import checked_paths, shows
from harness.spec import Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, Term

#: a campaign log an older harness wrote (causes were their words alone): `python -m harness fuzz
#: --paths eager,compiled --budget 90s --workers 0 --no-seeds` with compiled autograd's x1.5 fault
#: installed (HARNESS_SELFEVAL_FAULT=compiled_autograd_backward_scaled), torch 2.13.0
OLD_LOG = Path(__file__).parent / "data" / "old_causes" / "examples.jsonl"
OLD_CAUSE = "mismatch vs math at backward agrad"

WRONG = "outside tolerance (per-element error bound; worst error is 3 x its bound)"


def _failed(path: str, *mismatches: tuple[str, str, str, str]) -> PathOutcome:
    """(against, checkpoint, role, detail) each."""
    return PathOutcome(path, "failed", mismatches=[Mismatch(path, *m) for m in mismatches])


def test_the_same_words_on_two_path_families_are_two_causes():
    on_compiled = cause_of(_failed("compiled", ("math", "backward", "grad:x0", WRONG)))
    on_dynamo = cause_of(_failed("dynamo:aot_eager", ("math", "backward", "grad:x1", WRONG)))
    assert on_compiled == "mismatch vs math at backward grad on compiled [values]"
    assert on_dynamo == "mismatch vs math at backward grad on dynamo [values]"
    # every mode of one family is the family (its known issues name it so too)
    assert cause_of(_failed("compiled:eager", ("math", "backward", "grad:x3", WRONG))) == on_compiled
    assert Cause.parse(on_dynamo) == Cause("mismatch vs math at backward grad", "dynamo", "values")


def test_a_difference_eager_shows_too_is_one_cause_of_eager():
    """A wrong formula shows on every path: one cause, eager's, not one per family."""
    eager = _failed("eager", ("math", "backward", "grad:x0", WRONG))
    compiled = _failed("compiled", ("math", "backward", "grad:x0", WRONG))
    causes = causes_of([eager, compiled])
    assert causes["eager"] == causes["compiled"] == "mismatch vs math at backward grad on eager [values]"
    # a path that differs from eager where both differ from math has its own bug there
    own = _failed("compiled", ("math", "backward", "grad:x0", WRONG), ("eager", "backward", "grad:x0", WRONG))
    assert causes_of([eager, own])["compiled"] == "mismatch vs math at backward grad on compiled [values]"
    # and its first own difference is its cause, past the ones it shares with eager
    more = _failed("dynamo", ("math", "backward", "grad:x0", WRONG), ("math", "backward", "agrad:x1", WRONG))
    assert causes_of([eager, more])["dynamo"] == "mismatch vs math at backward agrad on dynamo [values]"


def test_owned_and_borrowed_share_the_native_family_only_for_a_difference_both_show():
    both = [_failed(p, ("eager", "backward", "grad:x0", "not bit-identical")) for p in ("owned", "borrowed")]
    assert set(causes_of(both).values()) == {"mismatch vs eager at backward grad on native [values]"}
    alone = causes_of([PathOutcome("owned", "ok"), both[1]])
    assert alone["borrowed"] == "mismatch vs eager at backward grad on borrowed [values]"
    # both differ from eager, but borrowed differs from owned there too: each has its own
    apart = causes_of([both[0], _failed("borrowed", ("eager", "backward", "grad:x0", "not bit-identical"),
                                        ("owned", "backward", "grad:x0", "not bit-identical"))])
    assert apart == {"owned": "mismatch vs eager at backward grad on owned [values]",
                     "borrowed": "mismatch vs eager at backward grad on borrowed [values]"}


def test_the_kind_of_difference_tells_a_missing_gradient_from_a_wrong_one():
    kinds = {detail: fingerprint(Mismatch("compiled", "math", "backward", "grad:x0", detail)) for detail in (
        WRONG, "got None, expected a tensor", "expected None", "shape (2,), expected (3,)",
        "dtype torch.float32, expected torch.float64", "not finite where expected is finite")}
    assert list(kinds.values()) == ["values", "missing tensor", "extra tensor", "shape", "dtype", "non-finite"]
    leak, cycle = (fingerprint(Mismatch("eager", "lifetime rule", "drop_all", "x0", detail)) for detail in (
        "still alive after every reference was dropped (leak)",
        "freed only by gc.collect(): held by a reference cycle"))
    assert (leak, cycle) == ("leak", "cycle")
    raised, missing = (fingerprint(Mismatch("dynamo", "eager", "backward", "error", detail)) for detail in (
        "dynamo raised TypeError: x; eager ran without error", "eager raised TypeError: x; dynamo ran without error"))
    assert (raised, missing) == ("raised", "missing error")


def test_a_cause_an_older_harness_wrote_is_its_words_on_the_families_it_was_seen_on():
    new = "mismatch vs math at backward agrad on compiled [values]"
    assert Cause.parse(OLD_CAUSE) == Cause(OLD_CAUSE)
    assert same_cause(OLD_CAUSE, new, {"eager", "compiled:eager"})
    assert not same_cause(OLD_CAUSE, new, {"dynamo"})
    assert same_cause(OLD_CAUSE, new)  # saved without its paths (a shared database): any family
    assert not same_cause(OLD_CAUSE, "mismatch vs math at backward grad on compiled [values]")
    assert not same_cause("mismatch vs math at backward agrad on dynamo [values]", new)  # both keyed: exact
    assert same_cause(OLD_CAUSE, "mismatch vs math at backward agrad on native [values]", {"borrowed"})


# --- real torch, two seeded faults with the same symptom ------------------------------------

#: x0 and x1 in, one output of both, inputs saved: a Function Dynamo traces (plain code, no jvp);
#: the gradients by autograd.grad (roles agrad:*), as in the old log's failure
SPEC = GraphSpec(shape=(3,), leaves=(LeafSpec(), LeafSpec()), backward="grad", functions=(FunctionSpec(
    args=(Arg("x0"), Arg("x1")), outputs=(OutputSpec("compute", terms=(Term(0, "sin", 1.5), Term(1, "square", 0.5))),),
    save=("inputs",), code="plain"),))
FAULTS = {"compiled": "compiled_autograd_backward_scaled", "dynamo": "dynamo_traced_backward_scaled"}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdict]:
    """Each fault's check of SPEC on eager and its own path."""
    found = {}
    for family, fault in FAULTS.items():
        with selfeval.installed(fault):
            found[family] = check(SPEC, [paths.get("eager"), paths.get(family)], lifetimes=False)
    return found


def test_two_faults_with_the_same_symptom_on_two_families_give_two_causes(verdicts):
    causes = {family: causes_of(v.outcomes.values()) for family, v in verdicts.items()}
    assert causes["compiled"].keys() == {"compiled"} and causes["dynamo"].keys() == {"dynamo"}, causes
    on_compiled, on_dynamo = causes["compiled"]["compiled"], causes["dynamo"]["dynamo"]
    assert Cause.parse(on_compiled).words == Cause.parse(on_dynamo).words  # what the old key was
    assert Cause.parse(on_compiled).family == "compiled" and Cause.parse(on_dynamo).family == "dynamo"
    assert on_compiled != on_dynamo


def _campaign(verdict: Verdict) -> CampaignResult:
    result = CampaignResult([*verdict.outcomes], "cpu")
    result.add_record({"kind": "start", "t": 1.0, "paths": [*verdict.outcomes], "device": "cpu", "lifetimes": False})
    result.add_record(example_record(SPEC, verdict, ("skipped", ""), generate_ms=1.0, check_ms=1.0))
    return result.finish()


def test_diff_tells_the_second_family_s_bug_from_the_first(verdicts):
    first, second = _campaign(verdicts["compiled"]), _campaign(verdicts["dynamo"])
    text, new = diff(first, second)
    assert new == 1, text
    assert "new failures (1):\n  x1 on dynamo: mismatch vs math at backward agrad on dynamo [values]" in text, text
    assert "fixed (seen last time, not tonight) (1):\n  mismatch vs math at backward agrad on compiled" in text, text
    assert diff(second, second)[1] == 0


def test_shrinking_keeps_to_the_family_of_its_cause(verdicts):
    """A candidate with the same words on another family does not show the cause (so shrinking
    the compiled bug never ends on the Dynamo one)."""
    (cause,) = causes_of(verdicts["compiled"].outcomes.values()).values()
    failure = Failure(cause, SPEC, "", paths={"compiled"})
    both = [paths.get("eager"), paths.get("compiled"), paths.get("dynamo")]
    # checked again beside eager, which tells a difference eager shares from the path's own
    assert [p.name for p in checked_paths(failure, both)] == ["eager", "compiled"]
    with selfeval.installed(FAULTS["dynamo"]):
        assert not shows(failure, SPEC, both, "cpu", lifetimes=False)
    with selfeval.installed(FAULTS["compiled"]):
        assert shows(failure, SPEC, both, "cpu", lifetimes=False)


# --- a campaign log an older harness wrote ----------------------------------------------------


def test_an_old_campaign_log_still_loads_reports_and_diffs(verdicts, tmp_path):
    old = load(OLD_LOG)
    assert set(old.failures) >= {OLD_CAUSE}, list(old.failures)
    assert old.failures[OLD_CAUSE].paths == {"compiled"}
    assert all(not Cause.parse(c).family for c in old.failures)  # the old format indeed
    folder = tmp_path / "old"
    folder.mkdir()
    shutil.copy(OLD_LOG, folder / "examples.jsonl")
    md, _ = write_reports(old, folder)
    assert f"### {OLD_CAUSE}" in md.read_text()
    # against tonight's keyed causes: the same words on the family it was seen on are not new,
    # on another family they are
    same, other = _campaign(verdicts["compiled"]), _campaign(verdicts["dynamo"])
    assert diff(old, same)[1] == 0
    text, new = diff(old, other)
    assert new == 1 and "on dynamo" in text.split("fixed")[0], text
    assert diff(same, old)[1] == 0  # and the other way round


def test_the_old_log_fixture_is_in_the_old_format():
    records = [json.loads(line) for line in OLD_LOG.read_text().splitlines()]
    causes = {o["cause"] for r in records if r["kind"] == "example" for o in r["outcomes"].values() if "cause" in o}
    assert OLD_CAUSE in causes and not any(" on " in c for c in causes), causes
