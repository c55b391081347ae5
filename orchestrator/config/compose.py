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


def _takes_a_list(key: str) -> bool:
    """Whether the schema's field at the dotted ``key`` (``sweep.dtypes``, ``kernels.rmsnorm.shapes``) is a list."""
    parent, _, name = key.lstrip("+~").rpartition(".")
    node: Any = schema.KernelCfg if parent.startswith("kernels.") else {"sweep": schema.SweepCfg}.get(parent)
    if node is None:
        return False
    field = next((f for f in dataclasses.fields(node) if f.name == name), None)
    return field is not None and "List" in str(field.type)


def _bracketed(override: str) -> bool:
    value = override.partition("=")[2].strip().strip("'\"")
    return value.startswith("[") or value in ("null", "")


def _schema_fields(path: str) -> list[str] | None:
    """The allowed keys at a dotted config path, from the schema dataclasses."""
    node: Any = schema.Config
    for part in [p for p in path.split(".") if p]:
        if node is schema.Config and part == "kernels":
            node = "kernels"
            continue
        if node == "kernels":
            node = schema.KernelCfg
            continue
        if not dataclasses.is_dataclass(node):
            return None
        types = {f.name: f.type for f in dataclasses.fields(node)}
        t = types.get(part)
        if t is None:
            return None
        node = getattr(schema, str(t).split("[")[0].split(".")[-1], None) if isinstance(t, str) else t
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
        t = types[key]
        if typing.get_origin(t) in (dict, typing.Dict) and isinstance(value, dict):  # kernels: name -> KernelCfg
            item = typing.get_args(t)[1]
            found = next((e for k, v in value.items() if (e := _unknown_key(v, item, f"{full}.{k}"))), None)
        else:
            found = _unknown_key(value, t, full)
        if found is not None:
            return found
    return None


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
    # Type errors: "Value 'abc' of type 'str' could not be converted to Integer"
    m = next((x for x in re.finditer(r"Value '([^'$]*)'.*could not be converted to (\w+)", msg)), None)
    if m:
        full = re.search(r"full_key: ([\w\.\-\[\]]+)", msg)
        key = full.group(1) if full else "?"
        return ConfigError(f"{key}: {m.group(1)!r} is not a valid {m.group(2)}")
    if "Missing mandatory value" in msg:
        full = re.search(r"full_key: ([\w\.\-\[\]]+)", msg)
        key = full.group(1) if full else "?"
        if key == "sweep":
            return ConfigError(f"no sweep chosen: add +sweep=NAME; allowed: {', '.join(group_options('sweep'))}")
        return ConfigError(f"{key}: missing value")
    if "override" in msg.lower() or "mismatched input" in msg or "parse" in msg.lower():
        return ConfigError(f"bad override: {first}")
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
            unlisted = [o for o in overrides if _takes_a_list(o.partition("=")[0]) and not _bracketed(o)]
            if named is err and unlisted:  # every override parses alone: a bare value where a list goes
                key, _, value = unlisted[0].partition("=")
                named = ConfigError(f"{err}: {key.lstrip('+~')} takes a list: write {key}=[{value}]")
            err = named
        raise ConfigError(_masked(str(err), overrides)) from exc
    finally:
        GlobalHydra.instance().clear()
    return cfg


def to_plain(cfg: DictConfig) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
