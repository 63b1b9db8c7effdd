"""YAML as schedcast reads its configs and specs: plain values only (yaml.SafeLoader) and no key given twice
in one mapping. PyYAML keeps the last of duplicate keys silently (``name: a`` then ``name: b`` is ``b``),
so a spec edited by hand could run something else than it reads; here that is a one-line ValueError
naming the key and its line."""
from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping holds the same key twice (``problem_mark`` is the second one)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    pass


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            continue  # the constructor words the unhashable key
        if key in seen:
            raise DuplicateKeyError(None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})",
                                    key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses a key given twice in one mapping (a :class:`DuplicateKeyError`, a
    ``yaml.YAMLError`` whose ``problem`` names the key and ``problem_mark`` its line)."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
