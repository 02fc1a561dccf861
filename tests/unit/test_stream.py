from __future__ import annotations

import json

import pytest

from compilescope.errors import StreamError
from compilescope.stream import distinct_shapes, parse_stream, write_jsonl


def test_explicit_one_dimension():
    assert parse_stream("16,16,32", ("n",)) == ({"n": 16}, {"n": 16}, {"n": 32})


def test_explicit_several_dimensions_keeps_workload_order():
    got = parse_stream("seq=32,batch=4;batch=8,seq=57", ("batch", "seq"))
    assert got == ({"batch": 4, "seq": 32}, {"batch": 8, "seq": 57})
    assert list(got[0]) == ["batch", "seq"]


def test_product_with_choices_and_ranges():
    got = parse_stream("product:batch=1|2;seq=16..48:16", ("batch", "seq"))
    assert len(got) == 6 and got[0] == {"batch": 1, "seq": 16} and got[-1] == {"batch": 2, "seq": 48}


def test_random_is_seeded_and_within_ranges():
    a = parse_stream("random:count=50;seed=3;batch=1..8;seq=16|32|64", ("batch", "seq"))
    b = parse_stream("random:count=50;seed=3;batch=1..8;seq=16|32|64", ("batch", "seq"))
    c = parse_stream("random:count=50;seed=4;batch=1..8;seq=16|32|64", ("batch", "seq"))
    assert a == b and a != c and len(a) == 50
    assert all(1 <= s["batch"] <= 8 and s["seq"] in (16, 32, 64) for s in a)


def test_jsonl_roundtrip_and_probe_form(tmp_path):
    path = tmp_path / "s.jsonl"
    write_jsonl(({"n": 4}, {"n": 8}), path)
    assert parse_stream(f"@{path}", ("n",)) == ({"n": 4}, {"n": 8})
    path.write_text(json.dumps({"shape": {"n": 5}}) + "\n\n")
    assert parse_stream(f"@{path}", ("n",)) == ({"n": 5},)


@pytest.mark.parametrize(
    "spec, dims, token",
    [
        ("16,abc,32", ("n",), "'abc'"),
        ("batch=4,sq=32", ("batch", "seq"), "'sq'"),
        ("batch=4", ("batch", "seq"), "'seq'"),
        ("16,32", ("batch", "seq"), "batch=8"),
        ("product:batch=1|x", ("batch",), "'x'"),
        ("random:batch=1..4", ("batch",), "count=N"),
        ("random:count=3;batch=9..4", ("batch",), "empty range"),
        ("bogus:1,2", ("n",), "'bogus:'"),
        ("16,-1", ("n",), "negative"),
        ("batch", ("batch",), "'batch'"),
    ],
)
def test_parse_errors_name_the_bad_token(spec, dims, token):
    with pytest.raises(StreamError) as err:
        parse_stream(spec, dims)
    assert token in str(err.value)
    assert "\n" not in str(err.value)


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"n": 4}\n{"n": "x"}\n')
    with pytest.raises(StreamError, match=r"bad.jsonl:2"):
        parse_stream(f"@{path}", ("n",))
    with pytest.raises(StreamError, match="cannot read"):
        parse_stream(f"@{tmp_path / 'missing.jsonl'}", ("n",))


def test_distinct_shapes_in_first_seen_order():
    stream = parse_stream("16,32,16,64,32", ("n",))
    assert distinct_shapes(stream) == [{"n": 16}, {"n": 32}, {"n": 64}]


@pytest.mark.parametrize("spec", ["batch=1,seq=x", "16,x,32", "product:n=4..2", "random:n=1|y;count=3", "bogus:1",
                                  "n", "@no-such-recording.jsonl", "  "])
def test_a_streams_syntax_is_refused_before_the_workload_loads_in_parse_streams_words(spec, tmp_path, monkeypatch):
    from compilescope.stream import check_syntax

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StreamError) as early:
        check_syntax(spec)
    with pytest.raises(StreamError) as late:
        parse_stream(spec, ("batch", "seq", "n") if "=" in spec else ("n",))  # bare sizes: a one-dim workload
    assert str(early.value) == str(late.value)


def test_a_streams_syntax_that_needs_the_workload_passes_the_early_check():
    from compilescope.stream import check_syntax

    for spec in ("16,32", "batch=1,seq=4;batch=2,seq=4", "product:n=1|2", "random:count=2;n=1..4", "wat=3"):
        check_syntax(spec)  # the dimension names are the workload's to judge


@pytest.mark.parametrize("command", ["run", "advise", "forecast", "warmup"])
def test_every_command_refuses_a_bad_stream_before_loading_the_workload(main, command):
    code, _, err = main(command, "no_such_file.py:w", "--stream", "n=x")
    assert code == 2 and err.strip() == "compilescope: error: bad stream token 'n=x': 'x' is not an integer", err


def test_a_recorded_file_whose_two_names_are_one_dimension_is_refused_not_matched_in_order(tmp_path):
    """``probe --stream-out`` of a model called with ids and a mask of the same length names
    that length twice; matched to (batch, seq) in order, the batch took the length — silently.
    Two dims of the file that always agree are refused, with the way out."""
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"input_ids.1": n, "attention_mask.1": n}) + "\n" for n in (8, 12, 16)))
    with pytest.raises(StreamError, match=r"input_ids.1 and attention_mask.1 are equal in every request"):
        parse_stream(f"@{path}", ("batch", "seq"))
    # two dims of one input that agree in every request (a square image) are two dims
    path.write_text("".join(json.dumps({"img.2": n, "img.3": n}) + "\n" for n in (224, 256)))
    assert parse_stream(f"@{path}", ("h", "w")) == ({"h": 224, "w": 224}, {"h": 256, "w": 256})
    # dims that differ somewhere are two dims: matched in order, as documented
    path.write_text("".join(json.dumps({"x.0": b, "x.1": s}) + "\n" for b, s in ((1, 8), (2, 8), (2, 16))))
    assert parse_stream(f"@{path}", ("batch", "seq")) == ({"batch": 1, "seq": 8}, {"batch": 2, "seq": 8},
                                                           {"batch": 2, "seq": 16})


def test_a_recorded_dims_path_whose_argument_no_line_names_is_refused_not_read_as_zero(tmp_path):
    """A typo in ``recorded_dims`` made every request's size 0 (then a reshape error per
    request, exit 1); a path that some lines lack (a prefill's empty cache) still reads as 0."""
    path = tmp_path / "rec.jsonl"
    lines = [{"shape": {"input_ids.0": 1, "input_ids.1": n}} for n in (8, 9)]  # a prefill: no cache size
    lines[1]["shape"]["cache.layers[0].keys.2"] = 8
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    dims = ("batch", "seq", "past")
    good = {"batch": "input_ids.0", "seq": "input_ids.1", "past": "cache.layers[0].keys.2"}
    assert [s["past"] for s in parse_stream(f"@{path}", dims, good)] == [0, 8]
    with pytest.raises(StreamError, match=r"past from 'cahce\.layers\[0\]\.keys\.2'.*no line of the stream names"):
        parse_stream(f"@{path}", dims, {**good, "past": "cahce.layers[0].keys.2"})
