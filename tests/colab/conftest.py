"""The Colab suite's closing report: each chapter's seconds, slowest first."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter) -> None:
    from test_colab import SECONDS  # the chapters' run fills it

    if not SECONDS:
        return
    terminalreporter.section("seconds of each chapter, run alone under nbval")
    for name, seconds in sorted(SECONDS.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:7.1f} s  {name}")
