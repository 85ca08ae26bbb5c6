import dataclasses
import json

import pytest
from hypothesis import given

from harness.spec import (Arg, FunctionSpec, GraphSpec, LeafSpec, OutputSpec, SpecError, Term, as_custom_op,
                          load_spec)
from strategies import graphs


@given(graphs())
def test_json_round_trip_is_lossless(spec):
    text = spec.to_json()
    again = GraphSpec.from_json(text)
    assert again == spec
    assert hash(again) == hash(spec)
    assert again.to_json() == text


def test_repr_is_readable():
    spec = GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(args=(Arg("x0"),), outputs=(
        OutputSpec("compute", terms=(Term(0, "sin", 2.0),)),), save=("inputs",)),))
    assert "Term(slot=0, op='sin', coeff=2.0)" in repr(spec)


def _write(tmp_path, text):
    p = tmp_path / "spec.json"
    p.write_text(text)
    return str(p)


def test_bad_json_is_one_sentence(tmp_path):
    with pytest.raises(SpecError, match=r"spec\.json: spec is not valid JSON .*; fix the file"):
        load_spec(_write(tmp_path, "{not json"))


def test_unknown_field_is_named(tmp_path):
    good = json.loads(GraphSpec(leaves=(LeafSpec(),)).to_json())
    good["leaves"][0]["colour"] = "red"
    with pytest.raises(SpecError, match=r"graph\.leaves\[0\]\.colour is an unknown field of LeafSpec"):
        load_spec(_write(tmp_path, json.dumps(good)))


def test_impossible_combination_names_field_and_value(tmp_path):
    spec = json.loads(GraphSpec(leaves=(LeafSpec(),)).to_json())
    spec["functions"] = [json.loads(json.dumps({
        "args": [{"ref": "x0", "clone": False, "const": None}],
        "outputs": [{"kind": "dirty", "slot": 0}]}))]
    with pytest.raises(SpecError, match=r"functions\[0\]\.outputs\[0\]\.slot=0 is invalid: a dirty input must be a clone"):
        load_spec(_write(tmp_path, json.dumps(spec)))


def test_reference_to_a_later_value_is_rejected():
    with pytest.raises(SpecError, match=r"args\[0\]\.ref='f1\.0' is invalid: refers to no earlier value"):
        GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(args=(Arg("f1.0"),)),))


def test_missing_file_says_so(tmp_path):
    with pytest.raises(SpecError, match=r"cannot read spec file .*nope\.json.*check the path"):
        load_spec(str(tmp_path / "nope.json"))


KEYWORDS = GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(
    args=(Arg("x0"), Arg(const=2.0)), outputs=(OutputSpec("compute", terms=(Term(0, "sin"),)),), save=("inputs",),
    style="setup_context", keyword_args=1),))


def test_a_spec_saved_before_keyword_args_loads_as_positional_and_keeps_its_json():
    old = json.loads(KEYWORDS.to_json())
    del old["functions"][0]["keyword_args"]
    text = json.dumps(old, sort_keys=True)
    spec = GraphSpec.from_json(text)
    assert spec.functions[0].keyword_args == 0
    assert spec.to_json() == text  # written only where set: the spec's hash and file names stay
    assert GraphSpec.from_json(KEYWORDS.to_json()) == KEYWORDS and '"keyword_args": 1' in KEYWORDS.to_json()


@pytest.mark.parametrize("count", [-1, 3, True, 1.0])
def test_keyword_args_counts_the_functions_arguments(count):
    with pytest.raises(SpecError, match=r"functions\[0\]\.keyword_args=.* is invalid: the number of last arguments "
                                        r"passed by keyword: an integer from 0 to 2"):
        dataclasses.replace(KEYWORDS, functions=(dataclasses.replace(KEYWORDS.functions[0], keyword_args=count),))


def test_a_custom_op_takes_no_keyword_arguments():
    assert as_custom_op(KEYWORDS.functions[0]) is None
    assert as_custom_op(dataclasses.replace(KEYWORDS.functions[0], keyword_args=0)) is not None
    with pytest.raises(SpecError, match=r"functions\[0\]\.api='custom_op' is invalid: .*keyword_args"):
        dataclasses.replace(KEYWORDS, functions=(dataclasses.replace(KEYWORDS.functions[0], api="custom_op"),))


def test_keyword_split_names_the_last_arguments_last_to_first():
    fn = FunctionSpec(args=(Arg("x0"), Arg(const=1), Arg("x0")), keyword_args=2)
    positional, keywords = fn.keyword_split(["t", 1, "u"])
    assert positional == ("t",) and list(keywords.items()) == [("a2", "u"), ("a1", 1)]
    assert dataclasses.replace(fn, keyword_args=0).keyword_split(["t", 1, "u"]) == (("t", 1, "u"), {})



#: three leaves, one Function reading them
SHARING = GraphSpec(leaves=(LeafSpec(), LeafSpec(), LeafSpec()), functions=(FunctionSpec(
    args=(Arg("x0"), Arg("x1"), Arg("x2")), outputs=(OutputSpec("compute", terms=(Term(0, "sin"), Term(2, "linear"))),),
    save=("inputs",), style="setup_context", vmap=True),))


def test_batch_shared_is_written_only_where_set():
    assert "batch_shared" not in SHARING.to_json()
    shared = dataclasses.replace(SHARING, batch_shared=(0, 2))
    assert '"batch_shared": [0, 2]' in shared.to_json() and GraphSpec.from_json(shared.to_json()) == shared


@pytest.mark.parametrize("batch_shared, why", [
    ((0, 1, 2), r"vmap needs one batched input"),
    ((2, 0), r"sorted leaf indices, each once"),
    ((3,), r"leaf 3 is not a leaf of this graph"),
])
def test_batch_shared_names_leaves_vmap_can_share(batch_shared, why):
    with pytest.raises(SpecError, match=rf"batch_shared=.* is invalid: {why}"):
        dataclasses.replace(SHARING, batch_shared=batch_shared)


#: one Function returning its second output in a list, read by a second Function
LISTED = GraphSpec(leaves=(LeafSpec(),), functions=(
    FunctionSpec(args=(Arg("x0"),), outputs=(OutputSpec(terms=(Term(0),)), OutputSpec(terms=(Term(0),), listed=True))),
    FunctionSpec(args=(Arg("f0.1"), Arg("x0")), outputs=(OutputSpec(terms=(Term(0), Term(1))),))))


def test_listed_is_written_only_where_set_and_packs_the_outputs_as_the_forward_returns_them():
    assert '"listed": true' in LISTED.to_json() and GraphSpec.from_json(LISTED.to_json()) == LISTED
    assert '"listed"' not in SHARING.to_json()  # (specs saved before the field keep their JSON)
    fn = LISTED.functions[0]
    assert fn.pack_outputs(["y", "z"]) == ("y", ["z"]) and fn.unpack_outputs(("y", ["z"])) == ["y", "z"]
    assert LISTED.listed_refs() == {"f0.1"} and not fn.outputs[1].differentiable and fn.outputs[0].differentiable
    single = dataclasses.replace(fn, outputs=fn.outputs[1:], tuple_output=False)
    assert single.pack_outputs(["z"]) == ["z"] and single.unpack_outputs(["z"]) == ["z"]
    with pytest.raises(RuntimeError, match="output 1 is returned in a one-element list, and came back as str"):
        fn.unpack_outputs(("y", "z"))


@pytest.mark.parametrize("output, why", [
    (OutputSpec(terms=(Term(0),), listed=True, non_differentiable=True), "only a computed output not marked"),
    (OutputSpec("view", slot=0, listed=True), "only a computed output not marked"),
])
def test_only_a_tracked_computed_output_is_listed(output, why):
    with pytest.raises(SpecError, match=rf"functions\[0\]\.outputs\[0\]\.listed=True is invalid: {why}"):
        GraphSpec(leaves=(LeafSpec(),), functions=(FunctionSpec(args=(Arg("x0"),), outputs=(output,)),))


def test_a_listed_output_is_neither_traced_nor_a_custom_op():
    with pytest.raises(SpecError, match=r"trace=True is invalid: .* a list is not one"):
        dataclasses.replace(LISTED, trace=True)
    fn = dataclasses.replace(LISTED.functions[0], style="setup_context")
    assert as_custom_op(fn) is None and as_custom_op(dataclasses.replace(fn, outputs=fn.outputs[:1])) is not None


#: F0 reads x1 passed in a list, beside x0
LISTED_ARG = GraphSpec(leaves=(LeafSpec(), LeafSpec()), functions=(FunctionSpec(
    args=(Arg("x0"), Arg("x1", listed=True)), outputs=(OutputSpec(terms=(Term(0), Term(1, "sin"))),),
    save=("inputs",)),))


def test_a_listed_argument_is_written_only_where_set_and_unpacked_as_the_forward_reads_it():
    assert '"listed": true' in LISTED_ARG.to_json() and GraphSpec.from_json(LISTED_ARG.to_json()) == LISTED_ARG
    fn = LISTED_ARG.functions[0]
    assert fn.unpack_args(["a", ["b"]]) == ["a", "b"]
    assert fn.listed_slots == (1,) and not fn.args[1].is_tensor_input and fn.args[0].is_tensor_input
    assert not fn.inner().listed_slots  # the outer forward passes the value itself


@pytest.mark.parametrize("arg, output", [
    (Arg("x1", listed=True, clone=True), OutputSpec(terms=(Term(1),))),
    (Arg("x1", listed=True), OutputSpec("view", slot=1)),
    (Arg(const=2, listed=True), OutputSpec(terms=(Term(0),))),
])
def test_a_listed_argument_is_an_uncloned_tensor_read_by_computed_outputs_only(arg, output):
    with pytest.raises(SpecError, match=r"functions\[0\]\.args\[1\]\.listed=True is invalid: a tensor argument "
                                        r"passed in a list is read by computed outputs only"):
        GraphSpec(leaves=(LeafSpec(), LeafSpec()), functions=(FunctionSpec(args=(Arg("x0"), arg), outputs=(output,)),))


def test_a_listed_argument_is_neither_traced_nor_a_custom_op_nor_modified_after_the_forward():
    with pytest.raises(SpecError, match=r"trace=True is invalid: .*pass the tensor itself"):
        dataclasses.replace(LISTED_ARG, trace=True)
    fn = dataclasses.replace(LISTED_ARG.functions[0], style="setup_context")
    assert as_custom_op(fn) is None
    reader = FunctionSpec(args=(Arg("f0.0", listed=True), Arg("x0")), outputs=(OutputSpec(terms=(Term(0), Term(1))),))
    with pytest.raises(SpecError, match=r"mutated_outputs=.* is invalid: 'f0.0' is passed in a list"):
        dataclasses.replace(LISTED_ARG, functions=(LISTED_ARG.functions[0], reader), mutated_outputs=("f0.0",))
