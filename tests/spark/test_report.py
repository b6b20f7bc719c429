"""The HTML report and its SVG charts, from plain rows (no Spark)."""

from __future__ import annotations

from typing import Any

from pykraft.spark import report, svg

T0 = 1_767_225_600_000


def sample() -> dict[str, list[dict[str, Any]]]:
    c = {"cluster": "prod<1>"}
    return {
        "summary": [c | {"records": 10, "errors": 1, "log_dirs": 3, "first_ms": T0,
                         "last_ms": T0 + 60_000}],
        "controller_leaders": [c | {"epoch": 1, "leader": 1, "offset": 0, "timestamp": T0,
                                    "voters": [1, 2, 3]},
                               c | {"epoch": 2, "leader": 2, "offset": 9,
                                    "timestamp": T0 + 30_000, "voters": [1, 2, 3]}],
        "fencing_periods": [c | {"broker_id": 101, "from_offset": 3, "since": T0 + 1000,
                                 "until_offset": None, "until": None, "cause": "fenced"}],
        "partition_changes": [c | {"topic_name": "orders", "topic_id": "x", "partition_id": 0,
                                   "leader_changed": True}] * 2,
        "topic_timeline": [c | {"offset": 4, "timestamp": T0 + 2000, "topics": 1,
                                "partitions": 3}],
        "topics": [c | {"topic_name": "orders", "topic_id": "x", "created_offset": 4,
                        "created_at": T0 + 2000, "removed_at": None}],
        "voter_changes": [c | {"offset": 2, "leader_epoch": 1, "voter_ids": [1, 2, 3],
                               "voter_directory_ids": None, "changed": True}],
        "record_types": [c | {"record_type": "NO_OP_RECORD", "count": 7}],
    }


def test_report_has_every_section_and_escapes_names() -> None:
    html = report.render(sample())
    assert html.count("<svg") == 5
    assert "prod&lt;1&gt;" in html and "prod<1>" not in html
    assert "orders-0" in html and ">2</text>" in html  # two leader changes
    assert "epoch 2" in html and "broker 101" in html
    assert "01-01 00:00:30" in html  # epoch 2 start in the table, UTC


def test_lanes_place_spans_on_the_time_axis() -> None:
    chart = svg.lanes("t", [("a", [(T0, T0 + 500, "x")])], T0, T0 + 1000)
    assert f'x="{svg.LABEL_W:.1f}"' in chart
    width = (svg.WIDTH - svg.LABEL_W - 20) / 2
    assert f'width="{width:.1f}"' in chart


def test_long_labels_widen_the_label_column() -> None:
    label = "REGISTER_CONTROLLER_RECORD"
    chart = svg.bar_chart("t", [(label, 4), ("NO_OP_RECORD", 1)])
    column = svg.CHAR_W * len(label) + 12
    assert column > svg.LABEL_W
    assert f'<rect x="{column:.1f}"' in chart  # bars start right of the whole label
    assert f'width="{round(column + svg.WIDTH - svg.LABEL_W)}"' in chart


def test_last_time_label_ends_at_its_tick() -> None:
    chart = svg.lanes("t", [("a", [(T0, T0 + 500, "x")])], T0, T0 + 1000)
    assert chart.count('text-anchor="end"') == 2  # the lane label and the last time label


def test_a_caption_longer_than_its_span_is_only_a_tooltip() -> None:
    caption = "registration-change"
    short = svg.lanes("t", [("a", [(T0, T0 + 50, caption)])], T0, T0 + 1000)
    long = svg.lanes("t", [("a", [(T0, T0 + 900, caption)])], T0, T0 + 1000)
    assert short.count(caption) == 1 and f"<title>{caption}</title>" in short
    assert long.count(caption) == 2
