"""The fuzz of the command lines: every value flag of every ``python -m`` command
of the book, and of every ``tools/*.py`` with flags, given generated values.

Each command runs in-process up to the point where its work would start (the
run engine's options, the benchmark's measurement), where a stub stops it: a
value the checks accept gets that far, and a bad one must stop the command
before, with exit status 2 and an error that names the flag (one line, for the
book's ``OneLineParser``), never a traceback. A fixed number of examples,
derandomized. Every path a command is given is relative to the test's folder
(the current directory), so that nothing is written outside it.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relpos.book import _cli

#: command -> its module (``build_parser()`` and ``main(argv)``).
COMMANDS = {
    "relpos.book.experiments": "relpos.book.experiments.cli",
    "relpos.book.experiments.interventions": "relpos.book.experiments.interventions.cli",
    "relpos.book.text": "relpos.book.text.cli",
    "relpos.book.text.masked_cli": "relpos.book.text.masked_cli",
    "relpos.book.text.length_probe": "relpos.book.text.length_probe",
    "relpos.book.text.gradients": "relpos.book.text.gradients",
    "relpos.book.probes.alignment": "relpos.book.probes.alignment.cli",
    "relpos.book.probes.gradients": "relpos.book.probes.gradients.cli",
    "relpos.book.probes.positions": "relpos.book.probes.positions.cli",
    "relpos.book.bench": "relpos.book.bench.cli",
    "relpos.book.bench costs": "relpos.book.bench.cli",
    "relpos.book.bench.profile": "relpos.book.bench.profile",
}

#: Where each command's work starts: (module, function) replaced by a stub.
WORK = [
    ("relpos.book.runner", "engine_options"),
    ("relpos.book.experiments.cli", "engine_options"),
    ("relpos.book.experiments.interventions.cli", "engine_options"),
    ("relpos.book.text.cli", "engine_options"),
    ("relpos.book.text.masked_cli", "engine_options"),
    ("relpos.book.text.gradients", "interference_study"),
    ("relpos.book.probes.alignment.cli", "engine_options"),
    ("relpos.book.probes.gradients.cli", "engine_options"),
    ("relpos.book.probes.positions.cli", "engine_options"),
    ("relpos.book.bench.cli", "run_benchmark"),
    ("relpos.book.bench.costs", "run_costs"),
    ("relpos.book.bench.profile", "profile_forward"),
]

#: A small grid for the experiments' command, whose checks build every run's
#: config (seconds for the default grid); the fuzzed flag comes after, and wins.
SMALL = {"relpos.book.experiments": ["--schemes", "none,t5", "--tasks", "copy",
                                     "--seeds", "0", "--train-sizes", "8"]}

#: The flags that name a file or folder: given a path inside the test's folder.
PATHS = {"--output": "out.json", "--plot": "out.png", "--per-item": "items.csv",
         "--runs-dir": "runs"}


class WouldRun(Exception):
    """The command passed its checks and would start its work here."""


def _stop(*args, **kwargs):
    raise WouldRun


def _parser(command: str) -> argparse.ArgumentParser:
    module = importlib.import_module(COMMANDS[command])
    if command.endswith(" costs"):
        return module.build_costs_parser()
    return module.build_parser()


def _flags(command: str) -> list[argparse.Action]:
    return [
        action for action in _parser(command)._actions
        if action.option_strings and action.nargs != 0
        and not isinstance(action, argparse._HelpAction)
        and action.help != argparse.SUPPRESS
    ]


def _main(command: str, argv: list[str]) -> None:
    module = importlib.import_module(COMMANDS[command])
    if command.endswith(" costs"):
        argv = ["costs", *argv]
    module.main(argv)


CASES = [(command, action.option_strings[0])
         for command in COMMANDS for action in _flags(command)]

#: Values a flag may meet: empty, signs, NaN, huge, lists with gaps, paths.
VALUES = st.one_of(
    st.sampled_from([
        "", " ", "x", "-1", "0", "-0", "nan", "inf", "-inf", "1e400", "2.5", "1,,2",
        ",", "0,0", "1,1", "3,2,1", "99999999999999999999", "-99999999999999999999",
        "1e-300", "none", "None", "a,b", "./", "missing/folder/x.json", ".",
        "dask", "local", "cuda:banana", "meta", "gather,gather", "naive,banana",
        "deberta,nonsense", "copy,banana", "causal,sideways", "1", "12", "100",
    ]),
    st.text(alphabet="abc019,.-_: ", max_size=6),  # no "/": paths stay relative
    st.integers(-(10**20), 10**20).map(str),
    st.floats().map(repr),
    st.lists(st.integers(-3, 300), max_size=3).map(lambda v: ",".join(map(str, v))),
)


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    for module, name in WORK:
        monkeypatch.setattr(importlib.import_module(module), name, _stop)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_command_is_fuzzed_and_stopped_before_its_work():
    for command in COMMANDS:
        assert _flags(command), command
    stopped = {module for module, _ in WORK}
    assert {module for module in COMMANDS.values()} - {
        "relpos.book.text.length_probe"  # imports the runner's engine_options late
    } <= stopped


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(CASES), value=VALUES)
def test_a_generated_flag_value_is_refused_naming_the_flag_or_accepted(
    stubbed, capsys, case, value
):
    command, flag = case
    action = next(a for a in _flags(command) if a.option_strings[0] == flag)
    argv = list(SMALL.get(command, []))
    for path_flag, name in PATHS.items():
        if path_flag != flag and any(
            path_flag in a.option_strings for a in _flags(command)
        ):
            argv += [path_flag, str(stubbed / name)]
    argv.append(f"{flag}={value}")
    capsys.readouterr()
    try:
        _main(command, argv)
    except WouldRun:
        return
    except SystemExit as stop:
        error = capsys.readouterr().err
        assert stop.code == 2, (command, flag, value, stop.code, error)
        named = [re.search(rf"(?<![\w-]){name}(?![\w-])", error)
                 for name in action.option_strings]
        assert any(named), (command, flag, value, error)
        if isinstance(_parser(command), _cli.OneLineParser):
            assert error.strip().count("\n") == 0, (command, flag, value, error)
        return
    pytest.fail(f"{command} {flag}={value!r} ran without reaching its work")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_default_call_reaches_the_work(stubbed, command):
    argv = []
    for path_flag, name in PATHS.items():
        if any(path_flag in a.option_strings for a in _flags(command)):
            argv += [path_flag, str(stubbed / name)]
    with pytest.raises(WouldRun):
        _main(command, argv)
    assert sys.argv  # untouched


# -- tools/*.py -----------------------------------------------------------------------

TOOLS = Path(__file__).resolve().parents[1] / "tools"

#: tool -> (the function where its work starts, the positional arguments of a
#: valid call). ``exam`` does its work (two small files in the test's folder).
TOOL_CALLS = {
    "assignments": ("write_course", ["course"]),
    "collect": ("collect", ["ch02", "--course", "course"]),
    "exam": (None, ["1", "--output", "exam"]),
    "grades": ("open_gradebook", ["course"]),
    "run_as_colab": ("run_alone", ["nb.ipynb", "--repo", "x"]),
    "build_slides": ("build", ["slides"]),
}


def _tool(name: str):
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    return importlib.import_module(name)


def _tool_parser(name: str) -> argparse.ArgumentParser:
    """The tool's parser, caught as ``main`` builds it (tools build it inline)."""
    found = []
    original = argparse.ArgumentParser.parse_args

    def catch(self, *args, **kwargs):
        found.append(self)
        raise WouldRun

    argparse.ArgumentParser.parse_args = catch
    try:
        _tool(name).main([])
    except WouldRun:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    return found[0]


#: (tool, flag): each value flag of each tool, and its first positional argument.
TOOL_CASES = [
    (tool, flag) for tool in TOOL_CALLS
    for flag in [
        "positional",
        *(a.option_strings[0] for a in _tool_parser(tool)._actions
          if a.option_strings and a.nargs != 0),
    ]
]


@pytest.fixture
def tools_stubbed(monkeypatch, tmp_path):
    for tool, (work, _) in TOOL_CALLS.items():
        if work is not None:
            monkeypatch.setattr(_tool(tool), work, _stop)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "course").mkdir()
    (tmp_path / "nb.ipynb").write_text("{}")
    return tmp_path


def test_every_tool_with_flags_is_fuzzed():
    with_parser = [
        path.stem for path in sorted(TOOLS.glob("*.py"))
        if "argparse" in path.read_text()
    ]
    assert sorted(with_parser) == sorted(TOOL_CALLS)
    assert len(TOOL_CASES) >= 2 * len(TOOL_CALLS)


@settings(max_examples=150, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(TOOL_CASES), value=VALUES)
def test_a_generated_tool_value_is_refused_naming_it_or_accepted(
    tools_stubbed, capsys, case, value
):
    tool, flag = case
    parser = _tool_parser(tool)
    argv = list(TOOL_CALLS[tool][1])
    if flag == "positional":
        first = next(a for a in parser._actions if not a.option_strings)
        argv[0], names = value, [first.dest]
    else:
        argv.append(f"{flag}={value}")
        names = next(a for a in parser._actions if flag in a.option_strings)
        names = names.option_strings
    capsys.readouterr()
    try:
        code = _tool(tool).main(argv)
    except WouldRun:
        return
    except SystemExit as stop:
        error = capsys.readouterr().err
        assert stop.code == 2, (tool, flag, value, stop.code, error)
        assert any(re.search(rf"(?<![\w-]){name}(?![\w-])", error)
                   for name in names), (tool, flag, value, error)
        return
    error = capsys.readouterr().err
    assert code in (0, 1, None), (tool, flag, value, code)
    if code == 1:  # a refusal: one line that names what to change
        assert error.strip(), (tool, flag, value)
