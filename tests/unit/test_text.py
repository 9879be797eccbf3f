"""report/text.py: names made safe for where they are written; here, a matplotlib label."""
from __future__ import annotations

from rpcprof.report.text import plot_label


def test_a_plot_label_keeps_its_line_breaks():
    assert plot_label("Each measured window over time\n20261126-023410-rust_tonic_mt") == (
        "Each measured window over time\n20261126-023410-rust_tonic_mt")


def test_a_plot_label_replaces_every_other_control_character_and_escapes_dollars():
    assert plot_label("a\rb\x1bc\u202ed\x00\ud800") == "a\ufffdb\ufffdc\ufffdd\ufffd\ufffd"
    assert plot_label("$5 <&>") == "\\$5 <&>"       # matplotlib escapes <&> in its SVG itself
