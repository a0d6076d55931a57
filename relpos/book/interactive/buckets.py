"""Chapter 6's figure, live: the log bucket of every distance ``i - j``.

The bucket count ``K`` (``position_buckets``) and the maximum position ``M``
(``max_relative_positions``) are chosen from powers of two, DeBERTa-v3's 256 and
512 among them. The browser computes the bucket of each distance in
``[-2M, 2M]`` itself, with the expression :data:`BUCKET`, a transcription of
``relpos.log_bucket_position``; :data:`ROW` is the table row it reads
(``relpos.position_index``). The tests evaluate both outside the browser
(:func:`relpos.book.interactive.evaluate`) over every offered setting and compare
them with ``relpos``.

On float precision: relpos (like ``transformers``) computes the logarithms in
float32, the browser in float64. Over every setting offered here and every
distance drawn, both give the same integers (tested), so no float32 emulation is
needed; other settings are not promised.

The exact region (``|i - j| <= K // 2``, :func:`relpos.exact_bucket_limit`) is
shaded, and each point is coloured by its region: exact, logarithmic (up to
``M - 1``) and beyond ``M - 1``, where the table row clips. Hovering a point (or
the distance slider) prints its distance, bucket and table row.
"""

from __future__ import annotations

import altair as alt
from matplotlib.figure import Figure

from relpos.checks import check_int
from relpos.positions import check_buckets

from ._controls import hovered_or, select, slider
from ._figure import Interactive

BUCKET_OPTIONS = tuple(2**e for e in range(2, 10))  # 4 .. 512
MAX_POSITION_OPTIONS = tuple(2**e for e in range(3, 11))  # 8 .. 1024
REACH = 2 * MAX_POSITION_OPTIONS[-1]  # the largest |i - j| drawn, 2M

_MID = "floor(buckets / 2)"
# relpos.log_bucket_position for distance datum.r, K = buckets, M = max_position.
BUCKET = (
    f"abs(datum.r) <= {_MID} ? datum.r : (datum.r < 0 ? -1 : 1) * "
    f"(ceil(log(abs(datum.r) / {_MID}) / log((max_position - 1) / {_MID}) "
    f"* ({_MID} - 1)) + {_MID})"
)
# relpos.position_index: the bucket shifted and clipped with span K.
ROW = "clamp(datum.bucket, -buckets, buckets - 1) + buckets"
REGION = (
    f"abs(datum.r) <= {_MID} ? 'exact' : abs(datum.r) < max_position ? "
    "'logarithmic' : 'beyond M - 1, row clips'"
)
REGIONS = ("exact", "logarithmic", "beyond M - 1, row clips")
# The bucket rule of relpos.check_buckets, for the options offered: K <= M.
VALID = "buckets <= max_position"

_INVALID = "K must be at most M, choose fewer buckets or a larger M"
_CHOSEN_R = hovered_or(0, "r0")

WIDTH, HEIGHT = 470, 300  # px, the plot; with its legend it fits in 700 px


def _check(bucket_size: int, max_position: int) -> tuple[int, int]:
    bucket_size = check_int("bucket_size", bucket_size)
    max_position = check_int("max_position", max_position)
    if bucket_size not in BUCKET_OPTIONS:
        raise ValueError(
            f"bucket_size must be one of {BUCKET_OPTIONS}, got {bucket_size}"
        )
    if max_position not in MAX_POSITION_OPTIONS:
        raise ValueError(
            f"max_position must be one of {MAX_POSITION_OPTIONS}, got {max_position}"
        )
    check_buckets(max_position, bucket_size)
    return bucket_size, max_position


def buckets_chart(
    bucket_size: int = 256, max_position: int = 512, distance: int = 300
) -> alt.LayerChart:
    """The log bucket against ``i - j``, for ``K = bucket_size``, ``M = max_position``.

    Args:
        bucket_size: the bucket count shown first, one of :data:`BUCKET_OPTIONS`.
        max_position: the maximum position shown first, one of
            :data:`MAX_POSITION_OPTIONS`, at least ``bucket_size``.
        distance: the distance the slider chooses first, ``|distance| <= REACH``.

    Returns:
        The chart; its mark ``buckets_marks`` draws one point per distance
        ("distance i - j: 300; bucket: 207; region: logarithmic; i - j: 300;
        table row: 463"), ``chosen_marks`` the line of text about the chosen
        distance.
    """
    bucket_size, max_position = _check(bucket_size, max_position)
    distance = check_int("distance", distance)
    if abs(distance) > REACH:
        raise ValueError(f"distance must lie in [-{REACH}, {REACH}], got {distance}")
    controls = [
        select("buckets", "buckets K", BUCKET_OPTIONS, bucket_size),
        select("max_position", "max position M", MAX_POSITION_OPTIONS, max_position),
        slider("r0", "distance i - j", distance, -REACH, REACH),
    ]
    hover = alt.selection_point(
        name="hover", on="pointerover", clear="pointerout", fields=["r"], nearest=True
    )
    distances = (
        alt.Chart(alt.sequence(-REACH, REACH + 1, as_="r"))
        .transform_filter(f"{VALID} && abs(datum.r) <= 2 * max_position")
        .transform_calculate(bucket=BUCKET)
        .transform_calculate(row=ROW, region=REGION)
    )
    x = alt.X("r:Q", title="distance i - j", scale=alt.Scale(nice=False))
    y = alt.Y("bucket:Q", title="bucket")
    exact = (
        alt.Chart(alt.sequence(0, 1, as_="s"))
        .transform_filter(VALID)
        .transform_calculate(lo=f"-{_MID}", hi=_MID)
        .mark_rect(color="#2ca02c", opacity=0.15, aria=False)
        .encode(x="lo:Q", x2="hi:Q")
        .properties(name="exact")
    )
    identity = (
        distances.transform_joinaggregate(reach="max(bucket)")
        .transform_filter("abs(datum.r) == datum.reach")
        .mark_line(color="grey", strokeDash=[5, 4], strokeWidth=1, aria=False)
        .encode(x=x, y=alt.Y("r:Q"))
        .properties(name="identity")
    )
    # Dotted: distance +-(M - 1), which reaches bucket +-(K - 1), and bucket +-K,
    # beyond which the table row clips.
    sides = alt.Chart(alt.sequence(0, 2, as_="s")).transform_filter(VALID)
    reach = (
        sides.transform_calculate(x="(2 * datum.s - 1) * (max_position - 1)")
        .mark_rule(color="#d62728", strokeDash=[2, 3], aria=False)
        .encode(x="x:Q")
        .properties(name="reach")
    )
    edge = (
        sides.transform_calculate(y="(2 * datum.s - 1) * buckets")
        .mark_rule(color="#ff7f0e", strokeDash=[2, 3], aria=False)
        .encode(y="y:Q")
        .properties(name="edge")
    )
    points = (
        distances.mark_circle(size=14, opacity=0.9)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "region:N",
                title="region",
                scale=alt.Scale(
                    domain=list(REGIONS), range=["#2ca02c", "#1f77b4", "#d62728"]
                ),
                legend=alt.Legend(orient="bottom", direction="horizontal"),
            ),
            tooltip=[
                alt.Tooltip("r:Q", title="i - j"),
                alt.Tooltip("bucket:Q", title="bucket"),
                alt.Tooltip("row:Q", title="table row"),
            ],
        )
        .add_params(hover)
        .properties(name="buckets")
    )
    chosen = (
        alt.Chart(alt.sequence(0, 1, as_="s"))
        .transform_filter(VALID)
        .transform_calculate(r=_CHOSEN_R)
        .transform_calculate(bucket=BUCKET)
        .transform_calculate(row=ROW, region=REGION)
    )
    marker = (
        chosen.mark_point(
            size=120, color="black", strokeWidth=2, clip=True, aria=False
        )
        .encode(x=x, y=y)
        .properties(name="marker")
    )
    line = (
        chosen.transform_calculate(
            text="'i - j = ' + datum.r + ', bucket ' + datum.bucket"
            " + ', table row ' + datum.row + ' (' + datum.region + ')'"
        )
        .mark_text(align="left", baseline="top", fontSize=12, x=6, y=6)
        .encode(
            text="text:N",
            tooltip=[
                alt.Tooltip("r:Q", title="i - j"),
                alt.Tooltip("bucket:Q", title="bucket"),
                alt.Tooltip("row:Q", title="table row"),
            ],
        )
        .properties(name="chosen")
    )
    invalid = (
        alt.Chart(alt.sequence(0, 1, as_="s"))
        .transform_filter(f"!({VALID})")
        .mark_text(fontSize=13, color="#d62728", x=WIDTH / 2, y=HEIGHT / 2)
        .encode(text=alt.value(_INVALID))
        .properties(name="invalid")
    )
    title = alt.Title(
        alt.ExprRef("'log buckets, K = ' + buckets + ', M = ' + max_position"),
        subtitle=(
            "exact region shaded, identity dashed, dotted at i - j = \u00b1(M - 1) "
            "and bucket = \u00b1K"
        ),
    )
    return (
        alt.layer(
            exact, reach, edge, identity, points, marker, line, invalid, title=title
        )
        .add_params(*controls)
        .properties(width=WIDTH, height=HEIGHT)
    )


def buckets_figure(
    bucket_size: int = 256,
    max_position: int = 512,
    *,
    still: Figure | None = None,
) -> Interactive:
    """:func:`buckets_chart` with its still (``plot.log_buckets`` by default).

    ``still`` is the matplotlib figure print and readers without JavaScript get;
    pass the one a later cell checks.
    """
    chart = buckets_chart(bucket_size, max_position)
    if still is None:
        from relpos.book import plot

        still = plot.log_buckets(bucket_size, max_position)
    mid = bucket_size // 2
    alt_text = (
        f"The log bucket of every distance from {-2 * max_position} to "
        f"{2 * max_position} for {bucket_size} buckets and maximum position "
        f"{max_position}: the points follow the dashed identity in the shaded exact "
        f"region |i - j| <= {mid}, then grow only logarithmically, reaching bucket "
        f"{2 * mid - 1} at distance {max_position - 1}. Two selectors change the "
        "bucket count and the maximum position; a slider chooses a distance, whose "
        "bucket and table row a line of text prints."
    )
    hint = (
        "Choose the bucket count K and the maximum position M; hover a point, or move "
        "the distance slider, for its bucket and table row."
    )
    return Interactive(chart, name="buckets", alt=alt_text, still=still, hint=hint)


__all__ = [
    "BUCKET",
    "BUCKET_OPTIONS",
    "MAX_POSITION_OPTIONS",
    "REACH",
    "ROW",
    "buckets_chart",
    "buckets_figure",
]
