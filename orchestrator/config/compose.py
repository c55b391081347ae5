"""Compose the Hydra configuration of one sweep and turn every way it can be wrong into one clear line.

Hydra's compose API does the composition (config groups, the override grammar, structured-config validation);
this module maps its exceptions to :class:`ConfigError` with the offending key and the allowed values, so the CLI
can print one line and exit 2 before Ray starts.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from orchestrator.config import schema
from workers.errors import UserError

GROUPS = ("sweep", "kernel", "target", "store", "cluster")


class ConfigError(UserError, ValueError):
    """A configuration that cannot run; str() is the one line shown to the user."""

    prefix = "config error"


def conf_dir() -> Path:
    env = os.environ.get("KERNELFLEET_CONF")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2] / "conf"


def conf_files(group: str) -> list[str]:
    d = conf_dir() / group
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def group_options(group: str) -> list[str]:
    """The options of a config group: its files in conf/, and for ``kernel`` the grids the registry's entries
    declare."""
    if group == "kernel":
        return sorted(kernel_grids())
    return conf_files(group)


# The config group whose one option, ``registry``, names every kernel that has a grid (conf/sweep/kernels.yaml).
KERNEL_SET = "kernel_set"


def kernel_grids() -> dict[str, dict[str, Any] | None]:
    """Every kernel with a default grid, by name: None where conf/kernel/<name>.yaml gives it (the file wins),
    else the grid its registry entry declares (``KernelEntry.grid``)."""
    grids: dict[str, dict[str, Any] | None] = dict.fromkeys(conf_files("kernel"))
    for name, grid in declared_grids().items():
        if name not in grids and grid is not None:
            grids[name] = grid
    return dict(sorted(grids.items()))


def declared_grids() -> dict[str, dict[str, Any] | None]:
    """Each registered kernel's default grid as a sweep's kernel config (``KernelEntry.default_grid``), or None.

    Read from the kernels' declarations (kernels/metadata/: neither torch nor a kernel module is imported, so a
    configuration's mistakes are found in a second); the registry checks that each entry's grid and
    implementations are its declaration's.  Only with test plugins (``KERNELFLEET_PLUGINS``), whose entries exist
    only as code, is the registry itself loaded."""
    if os.environ.get("KERNELFLEET_PLUGINS", "").strip():
        from kernels import registry

        return {name: registry.get(name).default_grid() for name in registry.kernel_names()}
    from kernels import metadata

    return {
        m.name: None
        if m.grid is None
        else {
            "name": m.name,
            "shapes": [list(s) for s in m.grid.shapes],
            "dtypes": list(m.grid.dtypes),
            "impls": list(m.grid.impls or m.impls),
        }
        for m in metadata.declared().values()
    }


def kernel_grid(name: str) -> dict[str, Any] | None:
    """A kernel's default grid (``name``, ``shapes``, ``dtypes``, ``impls``): conf/kernel/<name>.yaml when present,
    else its entry's; None when it has neither."""
    path = conf_dir() / "kernel" / f"{name}.yaml"
    if path.is_file():
        return OmegaConf.to_container(OmegaConf.load(path))  # type: ignore[return-value]
    return kernel_grids().get(name)


def register_kernel_grids() -> None:
    """Make the registry's grids Hydra options: ``kernel/<name>`` for each grid an entry declares (a file of
    conf/kernel/ of the same name takes its place), and ``kernel_set/registry`` placing every kernel's grid at
    ``kernels.<name>``, so the ``kernels`` sweep follows the registry."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group in ("kernel", KERNEL_SET):  # the grids of an earlier composition (another conf dir) are forgotten
        cs.repo.pop(group, None)
    grids = kernel_grids()
    for name, grid in grids.items():
        if grid is not None:
            cs.store(group="kernel", name=name, node=schema.KernelCfg(**grid))
    cs.store(group=KERNEL_SET, name="registry", node={"defaults": [{f"/kernel@kernels.{n}": n} for n in grids]})


def _bare(t: Any) -> Any:
    """A schema annotation without the ``Optional[...]`` and ``List[...]`` around it: the type of one value
    (``Optional[List[E2EMode]]`` -> ``E2EMode``)."""
    while typing.get_origin(t) in (typing.Union, list):
        t = next(a for a in typing.get_args(t) if a is not type(None))
    return t


def _field_type(path: str) -> Any:
    """The schema's annotation of the key at a dotted config path (``sweep.dtypes``: ``Optional[List[str]]``;
    ``kernels.rmsnorm``: ``KernelCfg``; ``sweep.e2e.modes[1]``: ``Optional[List[E2EMode]]``, the list's); the
    root's class for ""; None for a key the schema lacks."""
    t: Any = schema.Config
    for part in [p for p in re.sub(r"\[\d+\]", "", path.lstrip("+~")).split(".") if p]:
        owner = _bare(t)
        if typing.get_origin(owner) in (dict, typing.Dict):  # kernels: a kernel's name -> KernelCfg
            t = typing.get_args(owner)[1]
        elif dataclasses.is_dataclass(owner):
            t = typing.get_type_hints(owner).get(part)
        else:
            return None
        if t is None:
            return None
    return t


def _list_depth(key: str) -> int:
    """How deep the schema's field at the dotted ``key`` nests lists: ``sweep.dtypes`` 1, ``sweep.shapes`` and
    ``sweep.e2e.resolutions`` 2, ``sweep.name`` 0."""
    t, depth = _field_type(key), 0
    while True:
        if typing.get_origin(t) is typing.Union:
            t = next(a for a in typing.get_args(t) if a is not type(None))
        if typing.get_origin(t) is not list:
            return depth
        t, depth = typing.get_args(t)[0], depth + 1


def _list_hint(override: str) -> str | None:
    """How to write an override whose value has fewer brackets than its field nests lists (``sweep.dtypes=bf16``:
    "sweep.dtypes takes a list: write sweep.dtypes=[bf16]"; ``sweep.e2e.resolutions=[480,704]``); None for any
    other."""
    key, _, value = override.partition("=")
    bare = value.strip().strip("'\"").replace(" ", "")
    depth = _list_depth(key)
    missing = depth - (len(bare) - len(bare.lstrip("[")))
    if bare in ("null", "") or missing <= 0:
        return None
    what = "a list of lists" if depth > 1 else "a list"
    return f"{key.lstrip('+~')} takes {what}: write {key}={'[' * missing}{value}{']' * missing}"


def _schema_fields(path: str) -> list[str] | None:
    """The allowed keys at a dotted config path, from the schema dataclasses."""
    node = _bare(_field_type(path))
    if dataclasses.is_dataclass(node):
        return [f.name for f in dataclasses.fields(node)]
    return None


def _unknown_key(node: Any, cls: Any, path: str) -> ConfigError | None:
    """The first key of the composed ``node`` that the schema dataclass ``cls`` lacks (keys added with ``+``
    bypass Hydra's struct check), as the same one line a misspelt key gets; None when every key is known."""
    if not dataclasses.is_dataclass(cls) or not isinstance(node, dict):
        return None
    types = typing.get_type_hints(cls)
    for key, value in node.items():
        full = f"{path}.{key}" if path else str(key)
        if key not in types:
            where = f" in {path}" if path else ""
            return ConfigError(f"{full}: no such key; allowed keys{where}: {', '.join(types)}")
        t = _bare(types[key])
        if typing.get_origin(t) in (dict, typing.Dict) and isinstance(value, dict):  # kernels: name -> KernelCfg
            item = typing.get_args(t)[1]
            found = next((e for k, v in value.items() if (e := _unknown_key(v, item, f"{full}.{k}"))), None)
        else:
            found = _unknown_key(value, t, full)
        if found is not None:
            return found
    return None


def _type_error(msg: str) -> ConfigError | None:
    """The line for a value OmegaConf refuses for its field's type: one it cannot convert, a name outside an
    enumeration (the schema's ``Enum`` class is named for what a value is: "unknown mode 'turbo'; allowed: eager,
    ..."), a word that is no boolean, a list where one string goes, one value where a list goes; None for any
    other message."""
    full = re.search(r"full_key: ([\w\.\-\[\]]+)", msg)
    # "Value 'abc' of type 'str' could not be converted to Integer": the item's own key ("sweep.shapes[0][1]")
    m = re.search(r"Value '([^'$]*)'.*could not be converted to (\w+)", msg)
    if m:
        return ConfigError(f"{full.group(1) if full else '?'}: {m.group(1)!r} is not a valid {m.group(2)}")
    key = re.sub(r"\[\d+\]$", "", full.group(1)) if full else "?"  # a list's item: the list's key
    m = re.search(r"Invalid value '([^'$]*)', expected one of \[([^\]]*)\]", msg)
    if m:
        enum = _bare(_field_type(key))
        noun = enum.__name__ if isinstance(enum, type) and issubclass(enum, Enum) else "value"
        return ConfigError(f"{key}: unknown {noun} {m.group(1)!r}; allowed: {m.group(2)}")
    m = re.search(r"Value '([^'$]*)' is not a valid bool", msg)
    if m:
        return ConfigError(f"{key}: {m.group(1)!r} is not a valid Boolean; allowed: true, false")
    m = re.search(r"Cannot convert '(\w+)' to string: '([^$]*)'\n", msg)
    if m:
        return ConfigError(f"{key}: {m.group(2)} (a {m.group(1)}) is not a valid String")
    listed = _list_depth(key) if full else 0
    if "is not a ListConfig, list or tuple" in msg and listed and "Error merging override" not in msg:
        # one value where a list goes, in a config file (an override's own hint says how to write it: compose)
        return ConfigError(f"{key}: must be {_expected(_field_type(key))}; one value is written [value]")
    return None


# What a value of a schema type must be, in words (one value, several)
_WORDS = {bool: ("true or false", "booleans"), int: ("an integer", "integers"), float: ("a number", "numbers")}


def _expected(t: Any, several: bool = False) -> str:
    """What a value of the schema annotation ``t`` must be: "true or false", "a list of lists of integers"."""
    if typing.get_origin(t) is typing.Union:  # Optional[X]: null is the default, X is what a value must be
        t = next(a for a in typing.get_args(t) if a is not type(None))
    if typing.get_origin(t) is list:
        return ("lists of " if several else "a list of ") + _expected(typing.get_args(t)[0], several=True)
    if isinstance(t, type) and issubclass(t, Enum):
        return f"{t.__name__}s" if several else f"a {t.__name__}"
    return _WORDS.get(t, ("a string", "strings"))[several]


def _as_given(given: Any, typed: Any) -> bool:
    """Whether OmegaConf kept the plain value ``given`` as it is (a tuple may stand for a list, an integer for a
    number) rather than converting it ("3" to 3, "yes" or 1 to true)."""
    if isinstance(given, (list, tuple)):
        return isinstance(typed, list) and len(given) == len(typed) and all(map(_as_given, given, typed))
    if type(given) is int and type(typed) is float:
        return given == typed
    return type(given) is type(typed) and given == typed


def check_plain(path: str, values: dict[str, Any]) -> None:
    """Raise ConfigError (the same one line composition gives) unless each of the plain ``values``, the keys of
    the schema's dataclass at the dotted ``path`` (``sweep.e2e``), is what the schema declares for its key: OmegaConf
    checks each as composition does.  A value OmegaConf would have to convert ("3" for an integer, "yes" or 1 for a
    boolean) is refused as well, since the caller plans with the values as given; a composed configuration's
    values are already converted."""
    node: Any = OmegaConf.structured(_bare(_field_type(path)))
    for part in reversed(path.split(".")):  # placed at its path, so that OmegaConf's errors name the full key
        node = OmegaConf.create({part: node})
    node = OmegaConf.select(node, path)
    for key, value in values.items():
        where = f"{path}.{key}"
        try:
            node[key] = value
            kept = _as_given(value, OmegaConf.to_container(node, enum_to_str=True)[key])
        except Exception as exc:  # OmegaConf's ValidationError, ConfigKeyError, ...
            err = _translate(exc)
            if str(err).startswith(where):
                raise err from None
            kept = False  # its message lost the key ("full_key: 0" inside a list of lists): said below instead
        if not kept:
            raise ConfigError(f"{where}: must be {_expected(_field_type(where))}, got {value!r}")


def _translate(exc: Exception) -> ConfigError:
    chain, e = [], exc
    while e is not None and len(chain) < 5:
        chain.append(str(e).strip())
        e = e.__cause__ or e.__context__
    first = chain[0].splitlines()[0] if chain[0] else type(exc).__name__
    msg = "\n".join(reversed(chain))  # the root cause first: it names the key
    # Unknown option of a config group: "Could not find 'sweep/foo'" / "In 'config': Could not find 'target/x'"
    m = re.search(r"Could not (?:find|load) '([\w\-/]+)/([\w\-]+)'", msg)
    if m:
        group, option = m.group(1).strip("/").split("/")[-1], m.group(2)
        return ConfigError(f"{group}={option}: no such {group}; allowed: {', '.join(group_options(group))}")
    # Misspelt key: "Key 'dtype' not in 'SweepCfg'" with "full_key: sweep.dtype"
    m = re.search(r"Key '([^']+)' not in '(\w+)'", msg) or re.search(r"Key '([^']+)' is not in struct", msg)
    if m:
        full = re.search(r"full_key: ([\w\.\-\[\]]+)", msg)
        key = full.group(1) if full else m.group(1)
        parent = key.rsplit(".", 1)[0] if "." in key else ""
        allowed = _schema_fields(parent)
        where = f"{key}: no such key"
        return ConfigError(
            f"{where}; allowed keys{' in ' + parent if parent else ''}: {', '.join(allowed)}" if allowed else f"{where}"
        )
    typed = _type_error(msg)
    if typed is not None:
        return typed
    if "Missing mandatory value" in msg:
        full = re.search(r"full_key: ([\w\.\-\[\]]+)", msg)
        key = full.group(1) if full else "?"
        if key == "sweep":
            return ConfigError(f"no sweep chosen: add +sweep=NAME; allowed: {', '.join(group_options('sweep'))}")
        return ConfigError(f"{key}: missing value")
    if "override" in msg.lower() or "mismatched input" in msg or "parse" in msg.lower():
        return ConfigError(f"bad override: {first}")
    if first.endswith(":"):  # "In 'sweep/x': ValidationError raised while composing config:": and what it was
        return ConfigError(f"{first} {chain[-1].splitlines()[0]}")
    return ConfigError(first)


# Keys whose values are URLs or addresses, never Hydra expressions: a value holding '=', '?', '&' or '%' (a
# PostgreSQL URL with ?options=..., SQLite's ?mode=ro) is quoted for Hydra's override grammar here, so it works as
# typed.
VERBATIM_KEYS = ("store.url", "cluster.address")
_NEEDS_QUOTES = re.compile(r"[=?&%,\[\]{}()'\" \\]")


def _quote_verbatim(override: str) -> str:
    key, sep, value = override.partition("=")
    if (
        not sep
        or key.lstrip("+~") not in VERBATIM_KEYS
        or value in ("", "null")
        or value[0] in "'\""
        or not _NEEDS_QUOTES.search(value)
    ):
        return override
    return key + "='" + value.replace("'", "\\'") + "'"


def quoting_hint(override: str) -> str:
    """How to write an override whose value Hydra's grammar rejects: the value in double quotes, the whole override
    in single quotes for the shell."""
    key, _, value = override.partition("=")
    return "'" + key + '="' + value + "\"'"


def _bad_override(err: ConfigError, overrides: Sequence[str]) -> ConfigError:
    """The override Hydra's grammar rejects, found by parsing each one alone (Hydra's message names only the text
    around the error), with how to quote it when its value holds '=' or '?'."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for override in overrides:
        try:
            parser.parse_override(_quote_verbatim(override))
        except Exception:  # Hydra's HydraException, or a grammar error raised by ANTLR
            reason = str(err).removeprefix("bad override: ")
            value = override.partition("=")[2]
            if "=" in value or "?" in value:
                return ConfigError(
                    f"bad override {override}: {reason}; a value holding '=' or '?' must be quoted for Hydra, "
                    f"e.g. {quoting_hint(override)}"
                )
            return ConfigError(f"bad override {override}: {reason}")
    return err


_PASSWORD = re.compile(r"//[^/@:\s]*:([^/@\s]+)@")


def _masked(message: str, overrides: Sequence[str]) -> str:
    """``message`` with the password of any URL among the overrides (store.url=postgresql://USER:PASSWORD@...)
    shown as ``***``, as every other output shows it."""
    for override in overrides:
        for password in _PASSWORD.findall(override):
            message = message.replace(password, "***")
    return message


def compose(overrides: Sequence[str]) -> DictConfig:
    """Compose conf/config.yaml with the command-line overrides; raise ConfigError on any mistake."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    schema.register()
    bare = next((o for o in overrides if o.startswith("sweep=")), None)
    if bare is not None:  # a config group not in the defaults list is added with "+"
        raise ConfigError(f"{bare}: write +{bare} (a sweep is added to the configuration with '+')")
    if not any(o.lstrip("+~").startswith("sweep=") for o in overrides):
        raise ConfigError(f"no sweep chosen: add +sweep=NAME; allowed: {', '.join(group_options('sweep'))}")
    register_kernel_grids()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=[_quote_verbatim(o) for o in overrides])
            OmegaConf.resolve(cfg)
            # Touch every value so interpolation and missing-value errors surface here.
            plain = OmegaConf.to_container(cfg, throw_on_missing=True)
            unknown = _unknown_key(plain, schema.Config, "")
            if unknown is not None:
                raise unknown
    except ConfigError:
        raise
    except Exception as exc:  # Hydra/OmegaConf raise many types; all of them are configuration mistakes here
        err = _translate(exc)
        if str(err).startswith("bad override"):
            named = _bad_override(err, overrides)
            hints = [h for h in map(_list_hint, overrides) if h]
            if named is err and hints:  # every override parses alone: a bare value where a list goes
                named = ConfigError(f"{err}: {hints[0]}")
            err = named
        raise ConfigError(_masked(str(err), overrides)) from exc
    finally:
        GlobalHydra.instance().clear()
    return cfg


def to_plain(cfg: DictConfig) -> dict:
    """The composed configuration as plain data: an enumeration's value (schema.E2ECfg's model, modes, dtypes)
    as its string."""
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)  # type: ignore[return-value]
