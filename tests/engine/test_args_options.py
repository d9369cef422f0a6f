"""``Args.only_flag`` and ``Args.only_option``: the tail of a command that takes one
optional flag or one optional ``TOKEN value`` (AMEM.SEM.GET ... WITHVECTOR, AMEM.WORK.GET
... DEFAULT v)."""

from __future__ import annotations

import pytest

from hotkv_server.engine.args import Args
from hotkv_server.engine.errors import CommandError


def test_only_flag_is_there_in_any_case_and_any_number_of_times() -> None:
    assert Args([b"cmd", b"id"], 2).only_flag(b"WITHVECTOR") is False
    assert Args([b"cmd", b"id", b"withVector"], 2).only_flag(b"WITHVECTOR") is True
    assert Args([b"cmd", b"id", b"WITHVECTOR", b"withvector"], 2).only_flag(b"WITHVECTOR") is True


def test_only_option_gives_the_last_value() -> None:
    assert Args([b"cmd"], 1).only_option(b"DEFAULT") is None
    assert Args([b"cmd", b"default", b"a", b"DEFAULT", b"b"], 1).only_option(b"DEFAULT") == b"b"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([b"cmd", b"WITHVECTORS"], "WITHVECTOR"),  # another word: named with what was expected
        ([b"cmd", b"DEFAULT"], "DEFAULT"),  # the option without its value
    ],
)
def test_anything_else_is_one_error_line_naming_the_option(argv: list[bytes], message: str) -> None:
    token = b"WITHVECTOR" if message == "WITHVECTOR" else b"DEFAULT"
    args = Args(argv, 1)
    with pytest.raises(CommandError) as caught:
        args.only_flag(token) if token == b"WITHVECTOR" else args.only_option(token)
    text = str(caught.value)
    assert message in text and "\n" not in text
