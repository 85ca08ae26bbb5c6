"""Per-function costs: the dump parser on hand-written dumps, the per-row function table
(median chunk, loop subtracted, "(other)"), and `compare --attribute`. Fast: no valgrind
(the same parser reads real dumps in test_callgrind.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.counting import bench, report
from harness.counting.callgrind import CountingError, Dump, _counts, parse_dump, top_functions

# A callgrind dump as valgrind 3.19 writes it with --compress-strings (the default):
# names defined as "(id) name" on first use and referred to as "(id)" after; the cost
# line right after calls= is the call's inclusive cost, not the caller's self cost.
HAND_WRITTEN = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 1
part: 3

desc: Trigger: Client Request: r4.1

positions: line
events: Ir

summary: 1000

ob=(1) /usr/lib/libexample.so.1
fl=(1) example.c
fn=(1) caller(int)
0 100
cfn=(2) callee
calls=3 0
0 600
fi=(2) inline.h
0 20
fe=(1)
+2 5
cfn=(3) 0x0000000000001234
calls=1 0
0 40

fn=(2)
0 600

ob=(2) /usr/bin/python3.11
fn=(3)
0 40
fn=(4) 0x0000000000009999
0 30
fn=(5) recursive'2
0 200
fn=(6) recursive
0 5
ob=(1)
fn=(7) 0x0000000000005678
0 0
"""


def test_self_costs_skip_the_cost_line_after_calls(tmp_path: Path) -> None:
    dump_file = tmp_path / "callgrind.out.3"
    dump_file.write_text(HAND_WRITTEN)
    dump = parse_dump(dump_file)
    assert (dump.part, dump.label, dump.instructions) == (3, "r4.1", 1000)
    assert dump.functions == {
        "caller(int)": 125,  # 100 + 20 (an inlined file) + 5; the 600 and 40 after calls= are not its own
        "callee": 600,  # "(2)" refers to the name defined in the cfn= line
        # unnamed code is one entry per object; fn=(3) is the address defined by a cfn= line
        "??? [python3.11]": 70,
        "recursive": 205,  # recursion levels count as the function
    }
    assert sum(dump.functions.values()) == dump.instructions


def test_two_position_columns_and_omitted_trailing_costs(tmp_path: Path) -> None:
    dump_file = tmp_path / "callgrind.out.1"
    dump_file.write_text("events: Ir Dr\npositions: instr line\nsummary: 12 3\n"
                         "fn=(1) f\n0x10 1 7 3\n+3 2 5\ncfn=(2) g\ncalls=1 0x20 9\n0x11 1 99 1\n")
    assert parse_dump(dump_file).functions == {"f": 12}


def test_costs_that_do_not_add_up_to_the_totals_are_refused(tmp_path: Path) -> None:
    dump_file = tmp_path / "callgrind.out.1"
    dump_file.write_text(HAND_WRITTEN.replace("summary: 1000", "summary: 1001"))
    with pytest.raises(CountingError, match="add up to 1,000 instructions, the dump's total is 1,001"):
        parse_dump(dump_file)
    dump_file.write_text("events: Ir\nsummary: 5\nfn=(9)\n0 5\n")
    with pytest.raises(CountingError, match=r"name id \(9\) before defining it"):
        parse_dump(dump_file)


def _dump(total: int, functions: dict[str, int]) -> Dump:
    assert sum(functions.values()) == total
    return Dump("x", 0, "", "r", {"Ir": total}, functions)


def test_a_row_takes_the_median_chunk_less_the_loop(tmp_path: Path) -> None:
    loop = [_dump(100, {"loop": 100})] * 3
    # per rep (2 reps a chunk): chunk 0 -> 600, chunk 1 -> 450 (the median), chunk 2 -> 300
    region = [_dump(1300, {"loop": 100, "f": 1000, "g": 200}),
              _dump(1000, {"loop": 100, "f": 600, "g": 296, "tiny": 4}),
              _dump(700, {"loop": 100, "f": 400, "g": 200})]
    counts = _counts(region, loop, 2, functions=True)
    assert counts["instructions"] == 450
    assert counts["spread"] == round((600 - 300) / 450, 4)
    # the median chunk's functions, per rep; "loop" cancels against the loop-only region
    assert counts["functions"] == {"f": 300.0, "g": 148.0, "tiny": 2.0, "(other)": 0.0}
    assert "functions" not in _counts(region, loop, 2, functions=False)


def test_an_even_number_of_chunks_averages_the_two_middle_ones() -> None:
    loop = [_dump(0, {})] * 4
    region = [_dump(100, {"f": 100}), _dump(200, {"f": 150, "g": 50}),
              _dump(300, {"f": 300}), _dump(900, {"f": 900})]
    counts = _counts(region, loop, 1, functions=True)
    assert counts["instructions"] == 250
    assert counts["functions"] == {"f": 225.0, "g": 25.0, "(other)": 0.0}


def test_small_functions_go_into_other_and_the_sum_is_the_row() -> None:
    per_function = {"big": 9_000.4, "small": 1.2, "negative": -30.0, "half": 0.4}
    kept = top_functions(per_function, 8_972, share=0.002)  # threshold: 17.9 a rep
    assert list(kept) == ["big", "negative", "(other)"]
    assert kept["(other)"] == pytest.approx(8_972 - 9_000.4 + 30.0)
    assert sum(kept.values()) == pytest.approx(8_972)


# --- attribution --------------------------------------------------------------------------


def _row(path: str, instructions: int, functions: dict[str, float] | None, case: str = "seed",
         inputs: int = 13) -> dict[str, Any]:
    row = {"scenario": "seed" if case == "seed" else "sweep", "case": case, "path": path,
           "phase": "forward", "inputs": inputs, "instructions": instructions, "reps": 50}
    if functions is not None:
        assert sum(functions.values()) == pytest.approx(instructions)
        row["functions"] = functions
    return row


OWNED = {"apply<Owned>": 4_000.0, "retain_": 446.0, "reset_not_null_": 832.0, "malloc": 1_000.0,
         "shared": 500.0, "(other)": 222.0}
BORROWED = {"apply<Borrowed>": 4_050.0, "malloc": 980.0, "shared": 500.0, "new_in_b": 30.0,
            "(other)": 221.0}


def test_the_attribution_sums_to_the_delta() -> None:
    old, new = _row("owned", 7_000, OWNED), _row("borrowed", 5_781, BORROWED)
    for coverage, top, full_names in ((0.9, 25, True), (1.0, 25, True), (0.5, 2, True), (0.0, 25, True),
                                      (0.9, 25, False), (1.0, 25, False), (0.5, 1, False)):
        at = report.attribute(old, new, coverage=coverage, top=top, full_names=full_names)
        assert sum(m[3] for m in at.shown) + at.rest == pytest.approx(at.delta) == -1_219
        # every function that moved ("shared" did not); by base name the two apply<...> are one
        assert len(at.shown) + at.rest_count == (7 if full_names else 6)
        assert len(at.shown) <= top
    # 90% of the 9,379 that moved: the three largest movements
    at = report.attribute(old, new, full_names=True)
    assert at.gross == pytest.approx(4_050 + 4_000 + 832 + 446 + 30 + 20 + 1)
    assert [m[0] for m in at.shown] == ["apply<Borrowed>", "apply<Owned>", "reset_not_null_"]
    assert (at.rest_count, at.rest) == (4, pytest.approx(-446 - 20 + 30 - 1))
    merged = report.attribute(old, new, coverage=1.0)  # the instantiations pair up: apply moved +50
    assert [m[0] for m in merged.shown] == ["reset_not_null_", "retain_", "apply", "new_in_b", "malloc",
                                            "(other)"]
    assert merged.shown[2] == ("apply", 4_000.0, 4_050.0, 50.0)


def test_base_names_pair_instantiations_and_overloads() -> None:
    cases = {
        "_object* ns::apply_function<ns::OwnedInputs>(_object*, _object*)": "ns::apply_function",
        "c10::SmallVectorImpl<long>::operator=(c10::SmallVectorImpl<long>&&) [clone .isra.0]":
            "c10::SmallVectorImpl::operator=",
        "operator new(unsigned long)": "operator new",
        "at::(anonymous namespace)::Manager::getSnapshot() const": "at::{anonymous}::Manager::getSnapshot",
        "std::pair<std::__detail::_Node_iterator<int, false>, bool> std::_Hashtable<int>::_M_insert(int)":
            "std::_Hashtable::_M_insert",
        "tupledealloc": "tupledealloc",
        "??? [libffi.so.8]": "??? [libffi.so.8]",
    }
    assert {name: report.base_name(name) for name in cases} == cases


def test_rows_without_functions_are_not_attributed_and_say_why() -> None:
    with pytest.raises(report.ReportError, match="no per-function costs; rerun bench"):
        report.attribute(_row("owned", 7_000, None), _row("borrowed", 5_781, BORROWED))
    old = {"torch": "a", "results": [_row("eager", 100, None), _row("owned", 7_000, OWNED)]}
    new = {"torch": "b", "results": [_row("eager", 90, {"f": 90.0}), _row("owned", 5_781, {**BORROWED})]}
    found, notes = report.attribute_reports(old, new)
    assert [a.key[2] for a in found] == ["owned"]
    assert len(notes) == 1 and "seed eager forward" in notes[0]


def test_compare_attribute_of_two_paths_in_one_report(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row("eager", 9_000, {"f": 9_000.0}), _row("owned", 7_000, OWNED),
            _row("borrowed", 5_781, BORROWED)]
    path = tmp_path / "r.json"
    report.save_report({"torch": "2.14.1", "results": rows}, path)
    assert bench.compare_main([str(path), "--attribute", "--paths", "owned,borrowed", "--full-names"]) == 0
    out = capsys.readouterr().out
    assert "seed owned->borrowed forward (13 inputs): owned 7,000, borrowed 5,781, delta -1,219" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["function", "owned"])
    assert lines[header].split() == ["function", "owned", "borrowed", "delta", "share"]
    assert lines[header + 2].split() == ["apply<Borrowed>", "0.0", "4,050.0", "+4,050.0", "-332%"]
    assert lines[header + 3].split() == ["apply<Owned>", "4,000.0", "0.0", "-4,000.0", "+328%"]
    assert lines[header + 5].split() == ["(4", "more", "functions)", "-437.0", "+36%"]
    assert bench.compare_main([str(path), "--attribute", "--paths", "owned,borrowed", "--coverage", "1"]) == 0
    merged = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["apply", "4,000.0", "4,050.0", "+50.0", "-4%"] in merged
    # one report needs two paths; an unknown path is named
    assert bench.compare_main([str(path), "--attribute"]) == 2
    assert "--paths P,Q" in capsys.readouterr().err
    assert bench.compare_main([str(path), "--paths", "owned,compiled"]) == 2
    assert "no rows of path 'compiled'" in capsys.readouterr().err
    assert bench.compare_main([str(path), "--paths", "owned,borrowed", "--attribute", "--top", "0"]) == 2
    assert "at least 1 function" in capsys.readouterr().err


def test_compare_attribute_across_two_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    report.save_report({"torch": "2.13.0", "results": [_row("eager", 105_000, {"old": 60_000.0, "both": 45_000.0})]}, a)
    report.save_report({"torch": "2.14.1", "results": [_row("eager", 60_000, {"both": 45_500.0, "new": 14_500.0})]}, b)
    assert bench.compare_main([str(a), str(b), "--attribute", "--paths", "eager"]) == 0
    out = capsys.readouterr().out
    assert "A: " in out and "(torch 2.13.0)" in out and "(torch 2.14.1)" in out
    shown = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and "." in line]
    assert shown == ["old", "new", "(1"]  # 74,500 of the 75,000 that moved (99%), then the rest
    assert "  (1 more function)  " in out
    without = tmp_path / "without.json"
    report.save_report(report.without_functions(json.loads(a.read_text())), without)
    assert bench.compare_main([str(without), str(b), "--attribute"]) == 2
    captured = capsys.readouterr()
    assert "not attributed: seed eager forward (13 inputs) has no per-function costs" in captured.out
    assert "no row could be attributed" in captured.err
