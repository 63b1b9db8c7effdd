"""features.traces._io._plain_layout reads the plain date-time layout from bytes: it must agree with the
regular expression it replaces on every value, in string and large_string arrays, chunked and sliced."""
from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc

from features.traces import _io as trace_io


def _mutants(rng: random.Random) -> str:
    base = list(f"{rng.randint(1000, 2999)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                f"{rng.choice(' T')}{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    kind = rng.random()
    if kind < 0.4:
        return "".join(base)
    i = rng.randrange(len(base))
    if kind < 0.7:  # one character replaced, by anything from digits to non-ASCII
        base[i] = rng.choice("0123456789-: Tt/x.é٣\t")
    elif kind < 0.85:  # one character dropped or doubled
        base[i:i + 1] = [] if rng.random() < 0.5 else [base[i], base[i]]
    else:
        base.insert(i, rng.choice(["+08:00", "Z", " ", ".5"]))
    return "".join(base)


def _by_regex(arr) -> bool:
    return pc.all(pc.match_substring_regex(arr, trace_io._PLAIN_DATETIME)).as_py()


def test_plain_layout_agrees_with_the_pattern():
    rng = random.Random(3)
    verdicts = set()
    for trial in range(600):
        values = [_mutants(rng) if rng.random() < 0.2 else "2020-01-01 00:00:00" for _ in range(rng.randint(1, 12))]
        kind = pa.large_string() if trial % 2 else pa.string()
        cut = rng.randint(0, len(values))
        chunked = pa.chunked_array([pa.array(values[:cut], kind), pa.array(values[cut:], kind)], kind)
        padded = pa.array(["x", *values, "y"], kind).slice(1, len(values))  # a non-zero offset into the buffers
        expected = _by_regex(chunked)
        verdicts.add(expected)
        assert trace_io._plain_layout(chunked) is expected, values
        assert trace_io._plain_layout(padded) is expected, values
    assert verdicts == {True, False}
