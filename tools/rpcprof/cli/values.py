"""A job's options from click's parameters, by name: each option of `profile.sh run`, `sweep` and `attach` is a
click option named as its field in the job's options (jobs/run.py RunOptions, jobs/attach.py AttachOptions),
with its default from jobs/defaults.py. Adding an option is adding the field (and its default) and the click
option; nothing maps one onto the other by hand.
"""
from __future__ import annotations

from dataclasses import fields


def job_options(cls, params: dict, cli_only: tuple[str, ...] = (), **given):
    """An instance of the dataclass cls from click's parameters (ctx.params): each parameter goes to the field
    of its name (a tuple, from nargs=-1 or multiple=True, as a list); cli_only names the parameters that are
    not options of the job (how to print, or what the command passes apart); given sets fields the command
    line does not offer. A parameter that is neither a field nor in cli_only is a mistake in the command
    line's code: TypeError naming it (tests/unit/test_job_options.py finds it for every command)."""
    names = {f.name for f in fields(cls)}
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if k not in cli_only}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}: name the click parameter as the "
                        "field, or list it among the command's parameters that are not job options")
    return cls(**values, **given)
