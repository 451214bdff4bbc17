"""Read-only records built by keyword, for the few process-wide values every cold start defines: the
settings, the limits, the retry policy.

A NamedTuple costs ~0.25 ms a class at import (typing compiles its constructor from source, makes a
property per field and copies the class body over), a frozen dataclass more; a `Record` costs a few
µs: its fields are the class's annotations, their defaults its class attributes, and
`dataclass_transform` tells type checkers the keyword constructor. An instance is read-only and
equal by value, but has no positional form and is no tuple: records made in bulk, built by position
or unpacked stay NamedTuples."""

import inspect
from typing import Any, ClassVar, dataclass_transform


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Record:
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = inspect.get_annotations(cls)  # its own, in order; strings or types alike
        own = tuple(name for name, kind in declared.items() if "ClassVar" not in str(kind))
        cls._fields = (*cls._fields, *own)

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        for name in self._fields:
            if name in values:
                value = values[name]
            elif hasattr(type(self), name):
                value = getattr(type(self), name)  # the class attribute is the default
            else:
                raise TypeError(f"{type(self).__name__} needs {name!r}")
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"
