"""What every command of ``kafkalab`` shares to read its arguments: the parser class, the
command-group and option helpers, and the wording of a refused value under the option's name
(the output helpers are :mod:`kafkalab.cli.output`).

Each command module (:mod:`kafkalab.cli.cluster`, :mod:`kafkalab.cli.run`, …) adds its own
sub-command with these; :func:`kafkalab.cli.build_parser` only assembles them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

Command = Callable[[argparse.Namespace], int]
"""A command: the parsed arguments in, the exit code out."""

SubParsers = argparse._SubParsersAction  # the type ``add_subparsers`` returns
"""What a command module adds its parser to."""


class LabParser(argparse.ArgumentParser):
    """argparse that reports errors in the lab's one-line format."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def subcommands(p: argparse.ArgumentParser, dest: str,
                metavar: str = "ACTION") -> SubParsers[Any]:
    """A required level of sub-commands whose parsers report errors in one line."""
    sub = p.add_subparsers(dest=dest, metavar=metavar, parser_class=LabParser)
    sub.required = True
    return sub


def add_group(sub: SubParsers[Any], name: str, handler: Command, dest: str, *, help: str,
              description: str) -> SubParsers[Any]:
    """Add the command group ``name`` (run by ``handler``, its action in ``dest``) and return
    the level its actions are added to."""
    group = sub.add_parser(name, help=help, description=description)
    group.set_defaults(handler=handler)
    return subcommands(group, dest)


def add_down_action(actions: SubParsers[Any], description: str,
                    wipe_help: str) -> argparse.ArgumentParser:
    """A group's ``down``: stop exactly what its ``up`` started; ``--wipe``; ``--json``."""
    down = actions.add_parser("down", help="stop exactly the processes `up` started",
                              description=description)
    down.add_argument("--wipe", action="store_true", help=wipe_help)
    add_json_option(down, "print the stopped processes as one JSON document")
    return down


def run_id_arg(value: str) -> str:
    """A run id given on the command line (:func:`kafkalab.run_ids.run_id_problem`)."""
    from kafkalab.run_ids import run_id_problem

    problem = run_id_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def csv_list(value: str) -> list[str]:
    """``a,b,c`` as ``["a", "b", "c"]`` (blanks dropped; at least one item)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def int_list(value: str) -> list[int]:
    """``1,5,10`` as whole numbers."""
    try:
        return [int(v) for v in csv_list(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from None


def float_list(value: str) -> list[float]:
    """``100,500.5`` as numbers."""
    try:
        return [float(v) for v in csv_list(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {value!r}") from None


def add_txn_options(p: argparse.ArgumentParser, *, what: str) -> None:
    """``--txn-msgs`` (records per transaction, a cell or trial set each; 0 the plain
    producer) and ``--txn-abort-every``, for ``what`` (the cells, the broker faults)."""
    p.add_argument("--txn-msgs", type=int_list, default=None,
                   help=f"{what}: the producer sends in transactions of this many records (0: "
                   "the plain producer), comma-separated for one set each; consumers read "
                   "read_committed (default: no transactions; needs acks=all)")
    p.add_argument("--txn-abort-every", type=int, default=None,
                   help="with --txn-msgs: abort every k-th transaction after its records are "
                   "written (no read_committed reader may see them)")


def add_cluster_option(p: argparse.ArgumentParser) -> None:
    """``--cluster``: the cluster descriptor to use."""
    p.add_argument("--cluster", type=Path, default=None,
                   help="cluster descriptor YAML (default: .lab/cluster.yaml written by `cluster up`)")


def add_json_option(p: argparse.ArgumentParser, text: str = "print the result as one JSON document") -> None:
    """``--json``: one JSON document on stdout instead of text."""
    p.add_argument("--json", action="store_true", help=text)


def data_dir_arg(value: str) -> Path:
    """``--data-dir`` of a command that writes: a directory, or a path where one can be made
    (not a file)."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is not a directory")
    return path


def existing_data_dir_arg(value: str) -> Path:
    """``--data-dir`` of a command that reads: an existing directory."""
    path = data_dir_arg(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value}: no such directory")
    return path


def add_data_option(p: argparse.ArgumentParser, *, reads: bool = False) -> None:
    """``--data-dir``: the lab data directory; ``reads``: the command only reads it, so a
    directory given must exist (a typo must not read as "no runs")."""
    p.add_argument("--data-dir", type=existing_data_dir_arg if reads else data_dir_arg,
                   default=None, help="lab data directory (default: $KAFKALAB_DATA_DIR, else "
                   "lab-data/ in the project)")


def as_options(exc: ValidationError, option_of_field: Mapping[str, str]) -> str:
    """The first problem of a refused cell or trial, under the option that set the field
    (``--rate: Input should be greater than 0``); a check across fields is its message, with
    every field it names (a word with an underscore: ``thin_consumer``) given as its option."""
    import re

    from kafkalab.yamlio import describe_validation_error

    key, _, message = describe_validation_error(exc).partition(": ")
    if key == "(top level)":
        return re.sub(r"\b[a-z][a-z0-9]*_[a-z0-9_]*\b",
                      lambda m: option_of_field.get(m.group(0), m.group(0)), message)
    return f"{option_of_field.get(key, option_of_field.get(key.split('.')[0], key))}: {message}"


__all__ = ["Command", "LabParser", "SubParsers", "add_cluster_option", "add_data_option", "add_down_action", "add_group", "add_json_option", "as_options", "csv_list", "float_list", "int_list", "subcommands"]
