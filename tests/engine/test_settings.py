"""The typed view of the configuration (engine/settings.py) is kept in step with the
directive table (engine/config.py DIRECTIVES): one attribute per directive, of the type
its parser returns, and the attributes are the one storage CONFIG SET writes."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest

from hotkv_server.engine.config import DIRECTIVES, Config, ConfigError
from hotkv_server.engine.settings import Settings, attribute

HINTS = get_type_hints(Settings)

#: words to parse besides each directive's default, for the directives whose default
#: formats to no value (or one that shows too little of the type)
SAMPLES: dict[str, list[list[str]]] = {
    "replicaof": [["10.0.0.1", "6380"], ["no", "one"]],
    "bind": [["0.0.0.0", "::"]],
    "user": [["alice", "on", ">secret", "~*", "+@all"]],
    "maxmemory": [["64mb"]],
    "maxmemory-clients": [["1gb"]],
    "client-output-buffer-limit": [["normal 0 0 0 pubsub 32mb 8mb 60"]],
    "notify-keyspace-events": [["KEA"]],
    "save": [["3600", "1", "300", "100"]],
    "requirepass": [["secret"]],
}


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` (the forms Settings uses; an int is not a
    bool, a bool is not an int)."""
    origin = get_origin(hint)
    if origin is Literal:
        return any(type(value) is type(choice) and value == choice for choice in get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arm) for arm in get_args(hint))
    if origin is list:
        (item,) = get_args(hint)
        return type(value) is list and all(conforms(v, item) for v in value)
    if origin is tuple:
        arms = get_args(hint)
        return type(value) is tuple and len(value) == len(arms) and all(
            conforms(v, arm) for v, arm in zip(value, arms, strict=True))
    if hint is type(None):
        return value is None
    if hint in (int, bool, str):
        return type(value) is hint
    raise AssertionError(f"conforms() does not know {hint!r}: teach it the new form")


def test_the_checker_tells_types_apart() -> None:
    # the test below means something only if a wrong type is caught
    assert conforms(3, int) and not conforms(True, int) and not conforms(3, bool)
    assert conforms("everysec", Literal["always", "everysec"]) and not conforms("x", Literal["a"])
    assert not conforms(64, Literal["64"]) and conforms(64, Literal[64, 128])
    assert conforms(("h", 1), tuple[str, int] | None) and conforms(None, tuple[str, int] | None)
    assert not conforms(["h", 1], tuple[str, int] | None) and not conforms(("h", "1"), tuple[str, int])
    assert conforms([["a"]], list[list[str]]) and not conforms(["a"], list[list[str]])


def test_one_attribute_per_directive_in_table_order() -> None:
    expected = [attribute(name) for name in DIRECTIVES]
    missing = [f"{name}: add `{attribute(name)}: <type>` to engine.settings.Settings"
               for name in DIRECTIVES if attribute(name) not in HINTS]
    assert not missing, "\n".join(missing)
    assert list(HINTS) == expected, "Settings lists attributes no directive has, or another order"


def test_no_directive_shadows_a_member_of_config() -> None:
    members = {name for cls in Config.__mro__ if cls is not object for name in vars(cls)}
    clashes = sorted(set(HINTS) & (members - set(HINTS) - {"__slots__"}))
    assert not clashes
    assert not {"path", "values"} & set(HINTS)


def _words_to_try(name: str) -> list[list[str]]:
    directive = DIRECTIVES[name]
    tries = [[directive.format(directive.default)]] if not directive.repeatable else []
    choices = getattr(directive.parse, "choices", ())
    tries += [[str(choice)] for choice in choices]
    return tries + SAMPLES.get(name, [])


@pytest.mark.parametrize("name", list(DIRECTIVES))
def test_the_attribute_has_the_type_the_parser_gives(name: str) -> None:
    directive = DIRECTIVES[name]
    hint = HINTS[attribute(name)]
    assert conforms(Config().get(name), hint), f"{name}'s default {directive.default!r} is no {hint}"
    parsed = 0
    for words in _words_to_try(name):
        config = Config()
        try:
            config.set(name, words, where="test")
        except ConfigError:
            continue  # (a default such as replicaof's None has no words that parse)
        value = getattr(config, attribute(name))
        assert conforms(value, hint), f"{name} {words} gives {value!r}, Settings says {hint}"
        assert config.values[name] is value
        parsed += 1
    assert parsed, f"no sample of {name} parses: add one to SAMPLES"


@pytest.mark.parametrize("name", [n for n, d in DIRECTIVES.items() if hasattr(d.parse, "choices")])
def test_a_choice_is_the_literal_of_its_attribute(name: str) -> None:
    hint = HINTS[attribute(name)]
    assert get_origin(hint) is Literal
    assert get_args(hint) == DIRECTIVES[name].parse.choices  # type: ignore[attr-defined]


def test_every_literal_attribute_is_parsed_as_a_choice() -> None:
    # a Literal in Settings whose directive parses free text would let any word in
    loose = [name for name in DIRECTIVES if get_origin(HINTS[attribute(name)]) is Literal
             and not hasattr(DIRECTIVES[name].parse, "choices")]
    assert not loose


def test_the_attributes_are_the_one_storage() -> None:
    config = Config()
    config.set("maxmemory", ["1mb"], where="test", initial=False)
    assert config.maxmemory == 1024**2 and config.values["maxmemory"] == 1024**2
    config.values["hz"] = 20
    assert config.hz == 20 and config.get("hz") == 20
    config.set("client-output-buffer-limit", ["pubsub 1 2 3"], where="test", initial=False)
    assert config.client_output_buffer_limit.endswith("pubsub 1 2 3")
    saved = {"hz": config.hz}
    config.hz = 50
    config.restore(saved)
    assert config.hz == 20
    assert dict(config.values).keys() == DIRECTIVES.keys()
    with pytest.raises(TypeError):
        del config.values["hz"]
    with pytest.raises(KeyError):
        config.values["no-such-directive"]


def test_a_bad_choice_names_the_choices() -> None:
    config = Config()
    # Redis's words and order (appendfsync's), and the value that was refused
    with pytest.raises(ConfigError, match=r"'appendfsync' \('sometimes'\): argument\(s\) must be one "
                                          r"of the following: everysec, always, no$"):
        config.set("appendfsync", ["sometimes"], where="test")
    with pytest.raises(ConfigError, match=r"\('65'\): argument\(s\) must be one of the following: 64, 128, 256$"):
        config.set("embed-wordllama-dim", ["65"], where="test")
    config.set("appendfsync", ["ALWAYS"], where="test")
    assert config.appendfsync == "always"
