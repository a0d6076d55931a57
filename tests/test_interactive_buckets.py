"""Chapter 6's live figure: the browser's log buckets equal relpos's, at every setting.

The chart's bucket and row expressions are evaluated by Vega (vl-convert) at
every bucket count and maximum position the selectors offer, over every distance
drawn (``|i - j| <= 2M``), and compared with ``relpos.log_bucket_position`` and
``relpos.position_index``. JavaScript computes the logarithms in float64 and
relpos in float32; this is the test that they agree on these settings.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

pytest.importorskip("vl_convert")

import relpos  # noqa: E402
from relpos.book.interactive import buckets as live  # noqa: E402
from relpos.book.interactive import evaluate  # noqa: E402
from relpos.positions import check_buckets  # noqa: E402

SETTINGS = [
    (size, top)
    for size in live.BUCKET_OPTIONS
    for top in live.MAX_POSITION_OPTIONS
    if size <= top
]


@pytest.fixture(scope="module")
def chart():
    return live.buckets_chart()


def test_every_offered_setting_is_one_relpos_accepts() -> None:
    assert (256, 512) in SETTINGS
    for size, top in SETTINGS:
        assert check_buckets(top, size) == size


def test_buckets_and_rows_equal_relpos_at_every_setting(chart) -> None:
    for size, top in SETTINGS:
        rows = evaluate(chart, buckets=size, max_position=top)["buckets_marks"]
        r = torch.tensor([int(row["i - j"]) for row in rows])
        assert torch.equal(r, torch.arange(-2 * top, 2 * top + 1)), (size, top)
        bucket = torch.tensor([int(row["bucket"]) for row in rows])
        expected = relpos.log_bucket_position(r, size, top)
        assert torch.equal(bucket, expected), (size, top)
        expected_row = relpos.position_index(
            r, max_relative_positions=top, position_buckets=size
        )
        row_drawn = torch.tensor([int(row["table row"]) for row in rows])
        assert torch.equal(row_drawn, expected_row), (size, top)
        mid = relpos.exact_bucket_limit(size)
        regions = [row["region"] for row in rows]
        assert [x for x, g in zip(r.tolist(), regions) if g == "exact"] == list(
            range(-mid, mid + 1)
        )
        far = [abs(x) for x, g in zip(r.tolist(), regions) if g == live.REGIONS[2]]
        assert min(far) == top and max(far) == 2 * top


def test_the_largest_and_the_distinct_buckets_follow_the_setting(chart) -> None:
    seen = set()
    for size, top in [(256, 512), (128, 512), (256, 1024), (8, 64)]:
        rows = evaluate(chart, buckets=size, max_position=top)["buckets_marks"]
        buckets = {row["bucket"] for row in rows}
        r = torch.arange(-2 * top, 2 * top + 1)
        expected = relpos.log_bucket_position(r, size, top)
        assert max(buckets) == expected.max().item()
        assert len(buckets) == len(set(expected.tolist()))
        seen.add((max(buckets), len(buckets)))
    assert len(seen) == 4


def test_the_chosen_distance_prints_its_bucket_and_row(chart) -> None:
    for size, top, r0 in [(256, 512, 300), (256, 512, -7), (16, 32, -2048), (4, 8, 9)]:
        (line,) = evaluate(chart, buckets=size, max_position=top, r0=r0)["chosen_marks"]
        bucket = relpos.log_bucket_position(torch.tensor([r0]), size, top).item()
        row = relpos.position_index(
            torch.tensor([r0]), max_relative_positions=top, position_buckets=size
        ).item()
        assert (line["i - j"], line["bucket"], line["table row"]) == (r0, bucket, row)
        assert f"bucket {bucket}, table row {row}" in line["text"]


def test_a_setting_relpos_refuses_draws_no_buckets(chart) -> None:
    drawn = evaluate(chart, buckets=512, max_position=256)
    assert drawn["buckets_marks"] == [] and drawn["chosen_marks"] == []
    with pytest.raises(ValueError, match="position_buckets"):
        check_buckets(256, 512)


def test_the_json_is_deterministic_and_small() -> None:
    first = live.buckets_chart().to_dict()
    text = json.dumps(first, sort_keys=True)
    assert first == live.buckets_chart().to_dict()
    assert not re.search(r"\b(param|view)_\d+", text), "an unnamed param or view"
    assert len(text) < 20_000
    assert len(live.buckets_figure().html()) < 150_000
    names = {param["name"] for param in first["params"]}
    assert names == {"hover", "buckets", "max_position", "r0"}


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"bucket_size": 100}, ValueError, "bucket_size"),
        ({"max_position": 500}, ValueError, "max_position"),
        ({"bucket_size": 512, "max_position": 256}, ValueError, "position_buckets"),
        ({"bucket_size": 256.0}, TypeError, "bucket_size"),
        ({"distance": 5000}, ValueError, "distance"),
        ({"distance": "3"}, TypeError, "distance"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, word) -> None:
    with pytest.raises(error, match=word):
        live.buckets_chart(**kwargs)
