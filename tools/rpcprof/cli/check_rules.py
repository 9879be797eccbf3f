"""report.py check-rules: the rules file validated, and every rule deciding its own examples."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import check_examples, load_rules
from rpcprof.analyze.rules_file import problems_line
from rpcprof.cli.common import format_option, rules_option, show
from rpcprof.errors import EXIT_FAILED, UserError
from rpcprof.report.tables import render


@click.command("check-rules")
@rules_option
@format_option
def check_rules(rules_path, fmt):
    """Validate the rules file and that every rule decides its own examples."""
    rules = load_rules(rules_path)
    problems = check_examples(rules)
    if fmt != "table":
        rows = [{"rule": r.name, "category": r.category, "examples": len(r.examples)} for r in rules.rules]
        show(render(rows, [("category", "category"), ("rule", "rule"), ("examples", "examples")], fmt), fmt)
    if problems:
        raise UserError(f"{Path(rules_path).name}: " + problems_line(problems), exit_code=EXIT_FAILED)
    if fmt == "table":
        n = sum(len(r.examples) for r in rules.rules + rules.tax.rules + rules.waits.rules)
        subs = sum(len(v) for v in rules.subcategories.values())
        show(f"{Path(rules_path).name}: {len(rules.rules)} rules in {len(rules.categories)} categories "
                   f"({subs} sub-categories), {len(rules.tax.rules)} tax rules in {len(rules.tax.groups)} groups, "
                   f"{len(rules.waits.rules)} wait rules in {len(rules.waits.groups)} reasons, {n} examples, all decided "
                   "by their own rule.\n")
