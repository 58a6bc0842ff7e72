"""Every default once: a config dataclass default equals params.yaml's base value (or there is none).

The rule: params.yaml holds the values the project runs with. A dataclass field may keep a default
(used when a params file omits the key) only if it is the value params.yaml's base section gives;
a field whose value differs between the places params.yaml uses its class (e.g. each training
stage's `lr`) has no default. A mapping whose default is empty is a catalogue (per-stage resources,
zero-shot models): its entries are data only params.yaml holds. Profiles override base values and
are not compared.
"""

from __future__ import annotations

import dataclasses
import typing

from uniret.config.loader import PROFILE_KEY, read_params_file, strip_optional
from uniret.config.params import SECTIONS, section_class

_NO_DEFAULT = object()


def _default(f: dataclasses.Field) -> typing.Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return _NO_DEFAULT


def _same(default: typing.Any, value: typing.Any) -> bool:
    if isinstance(default, tuple):
        default = list(default)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return default == value


def disagreements(cls: type, values: dict, where: str, instance: typing.Any = None) -> list[str]:
    """Paths under `where` whose params value differs from the dataclass default there.

    `instance`: the default object of the enclosing field (a default_factory may set non-class
    defaults, e.g. the reranker's ModelConfig), else the class's own field defaults apply.
    """
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value, path = values[f.name], f"{where}.{f.name}"
        default = getattr(instance, f.name) if instance is not None else _default(f)
        tp = strip_optional(hints[f.name])
        if dataclasses.is_dataclass(tp) and isinstance(value, dict):
            nested = default if dataclasses.is_dataclass(default) else None
            out += disagreements(tp, value, path, nested)
        elif default == {}:
            continue  # a catalogue: entries live in params.yaml only
        elif default is not _NO_DEFAULT and not _same(default, value):
            out.append(f"{path}: dataclass default {default!r}, params.yaml {value!r}")
    return out


def test_dataclass_defaults_equal_params_yaml(repo_root):
    raw = read_params_file(repo_root / "params.yaml")
    found = []
    for name in SECTIONS:
        base = {k: v for k, v in (raw.get(name) or {}).items() if k != PROFILE_KEY}
        found += disagreements(section_class(name), base, name)
    assert not found, "defaults written twice, and differently:\n" + "\n".join(found)


@dataclasses.dataclass
class _Inner:
    lr: float = 2e-5


@dataclasses.dataclass
class _Outer:
    k: int = 3
    inner: _Inner = dataclasses.field(default_factory=lambda: _Inner(lr=5e-5))  # a non-class default


def test_the_check_catches_a_disagreement():
    assert disagreements(_Outer, {"k": 3, "inner": {"lr": 5e-5}}, "s") == []
    assert disagreements(_Outer, {"k": 4, "inner": {"lr": 2e-5}}, "s") == [
        "s.k: dataclass default 3, params.yaml 4", "s.inner.lr: dataclass default 5e-05, params.yaml 2e-05"]
