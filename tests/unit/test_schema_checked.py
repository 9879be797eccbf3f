"""schema.check keeps the hashes of the data it found valid (schema.CHECKED): the same data under the same
schema is not walked again, and anything else, valid or not, still is."""
from __future__ import annotations

from functools import cache

import pytest

from rpcprof import schema
from rpcprof.errors import UserError

SCHEMA = {"type": "object", "properties": {"n": {"type": "number"}}, "additionalProperties": False}


@pytest.fixture
def checked(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "CHECKED", tmp_path / "checked")
    monkeypatch.setattr(schema, "_checked", cache(schema._checked.__wrapped__))
    return tmp_path / "checked"


def test_valid_data_is_walked_once(checked, monkeypatch):
    assert schema.check({"n": 1}, SCHEMA, "f.yaml") == {"n": 1}
    assert len(checked.read_text().split()) == 1
    import jsonschema
    monkeypatch.setattr(jsonschema, "Draft202012Validator", None)      # walked again: a TypeError here
    schema._checked.cache_clear()                                       # as a new process reads the file
    assert schema.check({"n": 1}, SCHEMA, "f.yaml") == {"n": 1}
    with pytest.raises(TypeError):
        schema.check({"n": 2}, SCHEMA, "f.yaml")


def test_invalid_data_is_refused_every_time_and_not_kept(checked):
    for _ in range(2):
        with pytest.raises(UserError, match="f.yaml: .*n.*; fix it"):
            schema.check({"n": "one"}, SCHEMA, "f.yaml", "fix it")
    assert not checked.exists()
    schema.check({"n": 1}, {**SCHEMA, "required": ["n"]}, "f.yaml")
    with pytest.raises(UserError):                                      # the same data, another schema
        schema.check({}, {**SCHEMA, "required": ["n"]}, "f.yaml")


def test_a_folder_that_cannot_be_written_only_costs_the_walk(tmp_path, monkeypatch):
    monkeypatch.setattr(schema, "CHECKED", tmp_path / "missing" / "checked")
    monkeypatch.setattr(schema, "_checked", cache(schema._checked.__wrapped__))
    assert schema.check({"n": 1}, SCHEMA, "f.yaml") == {"n": 1}
    assert not (tmp_path / "missing").exists()
