"""Device detection: what GPU (or CPU) a worker runs on, as a :class:`workers.spec.DeviceInfo`, and the fleet's Ray
node labels derived from it.

Detection = facts from torch (name, arch, CUs, memory, versions) completed by the vendors' libraries where they
are installed (NVML, amdsmi: :mod:`workers.device.libs`, in-process) and by their tools where not: ``nvidia-smi`` on
CUDA (driver version), ``rocminfo`` and ``amd-smi`` on ROCm (wave size, chip id, marketing name, driver and ROCm
versions; amdsmi replaces ``amd-smi static``).  Every external command goes through :func:`run_tool`, which never
raises.

The work is split so that every path is testable on a CPU machine: :func:`torch_props` and
:func:`collect_tool_outputs` gather raw facts, and :func:`detect_from` turns raw facts into a DeviceInfo without
touching the machine.  Tests feed :func:`detect_from` recorded tool outputs.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from workers.device import gpu_types
from workers.device import libs as gpu_libs
from workers.device.parsers import amdsmi, nvidia_smi, rocminfo
from workers.spec import DeviceInfo

TOOL_TIMEOUT_S = 20.0

# Keys of the tool_outputs mapping that detect_from reads.
NVIDIA_SMI = (
    "nvidia-smi"  # --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv,noheader,nounits
)
ROCMINFO = "rocminfo"
AMD_SMI_STATIC = "amd-smi static"  # amd-smi static --json
AMD_SMI_VERSION = "amd-smi version"
ROCM_VERSION_FILE = "rocm-version-file"  # contents of $ROCM_PATH/.info/version
# Keys of the library facts mapping (collect_library_facts) that detect_from reads.
NVML = "nvml"  # list[nvidia_smi.NvidiaGpu] from NVML
AMDSMI = "amdsmi"  # list[amdsmi.AmdGpuStatic] from the amdsmi library

LABEL_PREFIX = "kernelfleet.io/"


# ------------------------------------------------------------------------------------------------ running tools


def find_tool(name: str) -> str | None:
    """A tool on PATH, or in ``$ROCM_PATH/bin`` / ``/opt/rocm/bin`` (ROCm tools are often not on PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"):
        if root:
            candidate = Path(root) / "bin" / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def run_tool(args: Sequence[str], timeout: float = TOOL_TIMEOUT_S) -> str | None:
    """Run a command and return its stdout, or None when the tool is missing, fails, times out or prints nothing.

    Never raises."""
    if not args:
        return None
    exe = find_tool(args[0])
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, *args[1:]],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return proc.stdout


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def collect_library_facts(backend: str) -> dict[str, list]:
    """The GPUs' static facts from the vendor library of ``backend`` (``cuda``: NVML, ``hip``: amdsmi), keyed
    :data:`NVML`/:data:`AMDSMI`; empty where the library is missing or fails."""
    name, lib = gpu_libs.library_for(backend)
    if lib is None:
        return {}
    read = gpu_libs.nvml_gpus if backend == "cuda" else gpu_libs.amdsmi_gpus
    try:
        gpus = read(lib)
    except Exception:  # noqa: BLE001 - a library that fails leaves detection to the tools
        return {}
    return {name: gpus} if gpus else {}


def collect_tool_outputs(backend: str, libs: Mapping[str, list] | None = None) -> dict[str, str]:
    """The vendor tools' outputs detection needs, for ``backend`` ``cuda`` or ``hip``, less those the library facts
    ``libs`` (:func:`collect_library_facts`) already hold; tools that are missing or fail are simply absent."""
    libs = libs or {}
    outputs: dict[str, str | None] = {}
    if backend == "cuda" and NVML not in libs:
        outputs[NVIDIA_SMI] = run_tool(
            ["nvidia-smi", "--query-gpu=" + ",".join(nvidia_smi.DEVICE_QUERY_FIELDS), "--format=csv,noheader,nounits"]
        )
    elif backend == "hip":
        outputs[ROCMINFO] = run_tool(["rocminfo"])
        if AMDSMI not in libs:
            outputs[AMD_SMI_STATIC] = run_tool(["amd-smi", "static", "--json"])
        outputs[AMD_SMI_VERSION] = run_tool(["amd-smi", "version"])
        root = os.environ.get("ROCM_PATH") or "/opt/rocm"
        outputs[ROCM_VERSION_FILE] = _read_text(Path(root) / ".info" / "version")
    return {k: v for k, v in outputs.items() if v}


# ------------------------------------------------------------------------------------------------ torch facts


def triton_version() -> str:
    """The imported Triton as device records hold it (:attr:`kernels.triton_dist.TritonDist.recorded`: the bare
    version for upstream ``triton``, ``pytorch-triton-rocm 3.5.1`` for ROCm's build), or "" without Triton."""
    from kernels.triton_dist import triton_distribution

    dist = triton_distribution()
    return dist.recorded if dist.version else ""


def _cpu_model() -> str:
    text = _read_text(Path("/proc/cpuinfo")) or ""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        m = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", text, re.MULTILINE)
        if m and m.group(1).strip():
            return m.group(1).strip()
    return platform.processor() or platform.machine() or "cpu"


def _mem_total_bytes() -> int:
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read_text(Path("/proc/meminfo")) or "", re.MULTILINE)
    return int(m.group(1)) * 1024 if m else 0


def torch_props(index: int = 0) -> dict[str, Any]:
    """What torch says about device ``index`` (``backend`` ``cuda``/``hip``), or about the CPU (``backend`` ``cpu``)
    when there is no GPU."""
    import torch

    props: dict[str, Any] = {
        "torch": torch.__version__,
        "triton": triton_version(),
        "index": index,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
    }
    if not torch.cuda.is_available():
        props.update(
            backend="cpu",
            cpu_model=_cpu_model(),
            machine=platform.machine(),
            cpu_count=os.cpu_count() or 0,
            memory_bytes=_mem_total_bytes(),
        )
        return props
    p = torch.cuda.get_device_properties(index)
    props.update(backend="hip" if torch.version.hip else "cuda", device_count=torch.cuda.device_count())
    for attr in (
        "name",
        "major",
        "minor",
        "multi_processor_count",
        "total_memory",
        "gcnArchName",
        "warp_size",
        "uuid",
        "pci_bus_id",
        "pci_device_id",
        "pci_domain_id",
        "L2_cache_size",
    ):
        value = getattr(p, attr, None)
        if value is not None and value != "":
            props[attr] = value if isinstance(value, (int, float, str)) else str(value)
    return props


# ------------------------------------------------------------------------------------------------ detection


def _visible_index(index: int, env: Mapping[str, str], names: Sequence[str]) -> int:
    """The physical index behind torch's ``index`` under ``*_VISIBLE_DEVICES`` (when it is a list of integers)."""
    for name in names:
        value = env.get(name)
        if value:
            parts = [p.strip() for p in value.split(",") if p.strip()]
            if all(p.isdigit() for p in parts) and index < len(parts):
                return int(parts[index])
            return index
    return index


def _hip_uuid_text(uuid: str) -> str | None:
    """HIP reports the agent's unique id as ASCII bytes in its 16-byte uuid; torch prints those bytes as a UUID.
    Recover the text (``25a594c05f2eb594``) that rocminfo shows as ``GPU-25a594c05f2eb594``.  Unverified on hardware:
    used only as one of several ways to pair a torch device with a rocminfo agent."""
    try:
        raw = bytes.fromhex(uuid.replace("-", "").removeprefix("GPU"))
        text = raw.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    return text.lower() if re.fullmatch(r"[0-9a-fA-F]{16}", text) else None


def _match_agent(
    gpus: list[rocminfo.RocmAgent], props: Mapping[str, Any], index: int, env: Mapping[str, str]
) -> rocminfo.RocmAgent | None:
    """The rocminfo GPU agent behind a torch device: by PCI bus, then uuid, then position (through
    ``HIP_VISIBLE_DEVICES``/``CUDA_VISIBLE_DEVICES``), then the first agent with the same gfx target."""
    if not gpus:
        return None
    bus = props.get("pci_bus_id")
    if isinstance(bus, int):
        for a in gpus:
            if a.pci_bus == bus:
                return a
    uuid = props.get("uuid")
    if isinstance(uuid, str):
        text = _hip_uuid_text(uuid)
        for a in gpus:
            if text and a.uuid.lower().removeprefix("gpu-") == text:
                return a
    gfx = str(props.get("gcnArchName", "")).split(":")[0]
    physical = _visible_index(index, env, ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"))
    if physical < len(gpus) and (not gfx or gpus[physical].gfx == gfx):
        return gpus[physical]
    same = [a for a in gpus if a.gfx == gfx]
    return same[0] if same else None


def _match_static(
    statics: list[amdsmi.AmdGpuStatic], agent: rocminfo.RocmAgent | None, physical: int
) -> amdsmi.AmdGpuStatic | None:
    if not statics:
        return None
    if agent is not None and agent.pci_bus is not None:
        for s in statics:
            if s.pci_bus == agent.pci_bus:
                return s
    for s in statics:
        if s.gpu == physical:
            return s
    return statics[physical] if physical < len(statics) else None


def _safe(parse, text: str | None, default):
    """A parser's result, or ``default`` when there is no text or the parser rejects it (detection never fails on a
    tool's odd output)."""
    if not text:
        return default
    try:
        return parse(text)
    except (ValueError, KeyError, TypeError, IndexError):
        return default


def _major_minor(version: str | None) -> str:
    if not version:
        return ""
    m = re.match(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else version


def _detect_cpu(props: Mapping[str, Any]) -> DeviceInfo:
    name = str(props.get("cpu_model") or platform.machine() or "cpu")
    return DeviceInfo(
        vendor="cpu",
        name=name,
        arch=str(props.get("machine") or platform.machine()),
        warp_size=0,
        compute_units=int(props.get("cpu_count") or 0),
        memory_bytes=int(props.get("memory_bytes") or 0),
        driver="",
        runtime="",
        torch=str(props.get("torch") or ""),
        triton=str(props.get("triton") or ""),
        gpu_type="cpu",
        index=0,
        extra={"sources": ["torch", "/proc/cpuinfo"]},
    )


def _detect_nvidia(
    props: Mapping[str, Any], tools: Mapping[str, str], env: Mapping[str, str], libs: Mapping[str, list]
) -> DeviceInfo:
    index = int(props.get("index") or 0)
    sources = ["torch"]
    gpus = libs.get(NVML) or _safe(lambda t: nvidia_smi.parse_gpus(t), tools.get(NVIDIA_SMI), [])
    physical = _visible_index(index, env, ("CUDA_VISIBLE_DEVICES",))
    smi = next((g for g in gpus if g.index == physical), gpus[physical] if physical < len(gpus) else None)
    if gpus:
        sources.append(NVML if libs.get(NVML) else "nvidia-smi")
    name = str(props.get("name") or (smi.name if smi else "") or "NVIDIA GPU")
    if "major" in props and "minor" in props:
        arch = f"sm_{props['major']}{props['minor']}"
    else:
        arch = (smi.sm if smi else None) or ""
    memory = int(props.get("total_memory") or (smi.memory_bytes if smi and smi.memory_bytes else 0))
    driver = next((g.driver_version for g in ([smi] if smi else []) + gpus if g and g.driver_version), "")
    cuda = props.get("cuda")
    extra: dict[str, Any] = {"sources": sources}
    if smi is not None and smi.compute_cap:
        extra["compute_cap"] = smi.compute_cap
    for key in ("uuid", "pci_bus_id", "L2_cache_size"):
        if key in props:
            extra[key] = props[key]
    if env.get("CUDA_VISIBLE_DEVICES"):  # the GPU(s) Ray (or the user) gave this process: which one a job ran on
        extra["visible_devices"] = env["CUDA_VISIBLE_DEVICES"]
    return DeviceInfo(
        vendor="nvidia",
        name=name,
        arch=arch,
        warp_size=int(props.get("warp_size") or 32),
        compute_units=int(props.get("multi_processor_count") or 0),
        memory_bytes=memory,
        driver=driver or "",
        runtime=f"cuda {cuda}" if cuda else "",
        torch=str(props.get("torch") or ""),
        triton=str(props.get("triton") or ""),
        gpu_type=gpu_types.identify("nvidia", arch, name),
        index=index,
        extra=extra,
    )


@dataclass(frozen=True)
class _AmdFacts:
    """Everything known about one AMD GPU before choosing among its sources: torch's properties, the rocminfo agent
    and the amd-smi static entry matched to it, rocminfo's whole report, ``amd-smi version`` and the ROCm version
    file."""

    props: Mapping[str, Any]
    agent: rocminfo.RocmAgent | None
    static: amdsmi.AmdGpuStatic | None
    report: rocminfo.RocminfoReport | None
    version: dict[str, str]
    version_file: str


@dataclass(frozen=True)
class _Source:
    """One place a field can come from: ``get(facts, fields)`` (``fields``: the fields resolved before this one)
    gives a value or something false.  ``noted``: when this source gives the field, ``tool`` joins the device's
    ``sources`` (the tools detection always reads are noted when read)."""

    tool: str
    get: Callable[[_AmdFacts, Mapping[str, Any]], Any]
    noted: bool = False


def _prop(key: str) -> _Source:
    return _Source("torch", lambda f, _: f.props.get(key))


def _agent(attr: str) -> _Source:
    return _Source("rocminfo", lambda f, _: getattr(f.agent, attr) if f.agent else None)


def _static(attr: str) -> _Source:
    return _Source("amd-smi static", lambda f, _: getattr(f.static, attr) if f.static else None)


def _rocm_from_file(f: _AmdFacts, _: Mapping[str, Any]) -> str:
    return f.version_file.strip().split("-")[0]


def _hip_runtime(f: _AmdFacts, _: Mapping[str, Any]) -> str:
    hip = f.props.get("hip")
    return f"hip {_major_minor(str(hip))}" if hip else ""


# Each field of an AMD GPU's description and its sources in order of preference: the first source with a value (not
# None, empty or zero) gives the field; the last column is the field when none has one.  Fields resolve in this
# order, so a source may use the fields above it (the default wave size follows the arch).
_AMD_FIELDS: tuple[tuple[str, tuple[_Source, ...], Any], ...] = (
    (
        "arch",
        (
            _Source("torch", lambda f, _: str(f.props.get("gcnArchName") or "").split(":")[0]),
            _agent("gfx"),
            _static("target_graphics_version"),
        ),
        "",
    ),
    ("chip_id", (_agent("chip_id"), _static("device_id")), None),
    ("compute_units", (_prop("multi_processor_count"), _agent("compute_units"), _static("compute_units")), 0),
    (
        "warp_size",
        (
            _agent("wavefront_size"),
            _prop("warp_size"),
            _Source("arch", lambda _, fields: 64 if fields["arch"].startswith("gfx9") else 32),
        ),
        0,
    ),
    ("marketing_name", (_agent("marketing_name"),), ""),
    ("market_name", (_static("market_name"),), ""),
    ("torch_name", (_Source("torch", lambda f, _: str(f.props.get("name") or "")),), ""),
    ("memory_bytes", (_prop("total_memory"), _agent("memory_bytes"), _static("vram_bytes")), 0),
    (
        "rocm",
        (
            _Source("amd-smi version", lambda f, _: amdsmi.rocm_version(f.version)),
            _Source("rocm version file", _rocm_from_file, noted=True),
        ),
        "",
    ),
    (
        "runtime",
        (
            _Source("rocm", lambda _, fields: f"rocm {fields['rocm']}" if fields["rocm"] else ""),
            _Source("torch", _hip_runtime),
        ),
        "",
    ),
    (
        "driver",
        (
            _Source("amd-smi version", lambda f, _: amdsmi.amdgpu_version(f.version)),
            _static("driver_version"),
            _Source("rocminfo", lambda f, _: f.report.kernel_module_version if f.report else ""),
        ),
        "",
    ),
)


def _resolve(facts: _AmdFacts, sources: list[str]) -> dict[str, Any]:
    """Each field of :data:`_AMD_FIELDS` from its first source with a value; a ``noted`` source that gives one joins
    ``sources``."""
    fields: dict[str, Any] = {}
    for name, candidates, default in _AMD_FIELDS:
        fields[name] = default
        for source in candidates:
            value = source.get(facts, fields)
            if value:
                fields[name] = value
                if source.noted:
                    sources.append(source.tool)
                break
    return fields


def _amd_facts(
    props: Mapping[str, Any], tools: Mapping[str, str], env: Mapping[str, str], libs: Mapping[str, list]
) -> tuple[_AmdFacts, list[str]]:
    """The tools' outputs parsed, the rocminfo agent and amd-smi entry of torch's device found, and the sources read
    (``torch``, then each tool that answered)."""
    index = int(props.get("index") or 0)
    sources = ["torch"]
    report = _safe(rocminfo.parse, tools.get(ROCMINFO), None)
    gpus = report.gpus() if report else []
    if gpus:
        sources.append("rocminfo")
    agent = _match_agent(gpus, props, index, env)
    physical = (
        gpus.index(agent)
        if agent in gpus
        else _visible_index(index, env, ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"))
    )
    statics = libs.get(AMDSMI) or _safe(amdsmi.parse_static, tools.get(AMD_SMI_STATIC), [])
    static = _match_static(statics, agent, physical)
    if static is not None:
        sources.append(AMDSMI if libs.get(AMDSMI) else "amd-smi static")
    version = _safe(amdsmi.parse_version, tools.get(AMD_SMI_VERSION), {})
    if version:
        sources.append("amd-smi version")
    facts = _AmdFacts(props, agent, static, report, version, tools.get(ROCM_VERSION_FILE) or "")
    return facts, sources


def _amd_name(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The GPU's full name and short type: the table's entry for its chip id, names and arch, else the first name
    that is not generic (amd-smi's, rocminfo's, torch's)."""
    arch, chip_id, cus = fields["arch"], fields["chip_id"], fields["compute_units"] or None
    names = (fields["market_name"], fields["marketing_name"], fields["torch_name"])
    known = gpu_types.lookup("amd", arch, " ".join(names), chip_id, cus)
    if known is not None:
        return known.full_name, known.short
    specific = next((n for n in names if n and n.strip().lower() not in gpu_types.GENERIC_AMD_NAMES), "")
    name = specific or fields["marketing_name"] or fields["torch_name"] or f"AMD {arch or 'GPU'}"
    return name, gpu_types.identify("amd", arch, name, chip_id, cus)


def _amd_extra(facts: _AmdFacts, fields: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """What the DeviceInfo's own fields do not hold: chip id, names, the full gcn arch, HIP version, the rocminfo
    agent's identity and L2 size, the compute partition and the visible devices."""
    props, agent, static = facts.props, facts.agent, facts.static
    extra: dict[str, Any] = {}
    if fields["chip_id"] is not None:
        extra["chip_id"] = f"0x{fields['chip_id']:04x}"
    if fields["marketing_name"]:
        extra["marketing_name"] = fields["marketing_name"]
    if props.get("gcnArchName"):
        extra["gcn_arch"] = str(props["gcnArchName"])
    if props.get("hip"):
        extra["hip"] = str(props["hip"])
    if agent is not None:
        extra["rocminfo_uuid"] = agent.uuid
        if agent.pci_bus is not None:
            extra["pci_bus"] = agent.pci_bus
        if "L2" in agent.cache_kb:
            extra["l2_cache_kb"] = agent.cache_kb["L2"]
    if static is not None and static.compute_partition:
        extra["compute_partition"] = static.compute_partition
    if env.get("HIP_VISIBLE_DEVICES"):  # the GPU(s) Ray (or the user) gave this process
        extra["visible_devices"] = env["HIP_VISIBLE_DEVICES"]
    return extra


def _detect_amd(
    props: Mapping[str, Any], tools: Mapping[str, str], env: Mapping[str, str], libs: Mapping[str, list]
) -> DeviceInfo:
    facts, sources = _amd_facts(props, tools, env, libs)
    fields = _resolve(facts, sources)
    name, gpu_type = _amd_name(fields)
    return DeviceInfo(
        vendor="amd",
        name=name,
        arch=fields["arch"],
        warp_size=int(fields["warp_size"]),
        compute_units=int(fields["compute_units"]),
        memory_bytes=int(fields["memory_bytes"]),
        driver=fields["driver"],
        runtime=fields["runtime"],
        torch=str(props.get("torch") or ""),
        triton=str(props.get("triton") or ""),
        gpu_type=gpu_type,
        index=int(props.get("index") or 0),
        extra={"sources": sources, **_amd_extra(facts, fields, env)},
    )


def detect_from(
    props: Mapping[str, Any],
    tool_outputs: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    libs: Mapping[str, list] | None = None,
) -> DeviceInfo:
    """A DeviceInfo from raw facts: ``props`` as :func:`torch_props` returns them (``backend`` ``cuda``/``hip``/
    ``cpu``), ``tool_outputs`` keyed by ``NVIDIA_SMI``/``ROCMINFO``/``AMD_SMI_STATIC``/``AMD_SMI_VERSION``/
    ``ROCM_VERSION_FILE``, the vendor library's facts ``libs`` keyed by ``NVML``/``AMDSMI`` (preferred over the
    tools' text where both are given), and the environment (for ``*_VISIBLE_DEVICES``; default ``os.environ``).
    Pure."""
    tools = dict(tool_outputs or {})
    libs = dict(libs or {})
    env = os.environ if env is None else env
    backend = props.get("backend")
    if backend == "cpu":
        return _detect_cpu(props)
    if backend == "hip":
        return _detect_amd(props, tools, env, libs)
    if backend == "cuda":
        return _detect_nvidia(props, tools, env, libs)
    raise ValueError(f"unknown backend {backend!r}; expected cuda, hip or cpu")


def detect(index: int = 0) -> DeviceInfo:
    """The DeviceInfo of GPU ``index`` (torch's numbering), or of the CPU when there is no GPU."""
    props = torch_props(index)
    if props["backend"] == "cpu":
        return detect_from(props)
    libs = collect_library_facts(props["backend"])
    return detect_from(props, collect_tool_outputs(props["backend"], libs), libs=libs)


def detect_all() -> list[DeviceInfo]:
    """Every GPU torch sees (the tools run once), or ``[cpu]`` without a GPU."""
    first = torch_props(0)
    if first["backend"] == "cpu":
        return [detect_from(first)]
    libs = collect_library_facts(first["backend"])
    tools = collect_tool_outputs(first["backend"], libs)
    infos = [detect_from(first, tools, libs=libs)]
    for i in range(1, int(first.get("device_count") or 1)):
        infos.append(detect_from(torch_props(i), tools, libs=libs))
    return infos


# ------------------------------------------------------------------------------------------------ Ray labels


def label_value(text: str) -> str:
    """``text`` as a valid Ray/Kubernetes label value: at most 63 characters of alphanumerics, ``-``, ``_``, ``.``,
    beginning and ending with an alphanumeric (``2.13.0+cpu`` -> ``2.13.0-cpu``, ``cuda 13.0`` -> ``cuda-13.0``)."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip())
    s = re.sub(r"-{2,}", "-", s)
    s = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", s)
    return re.sub(r"[^A-Za-z0-9]+$", "", s[:63])


def labels(info: DeviceInfo) -> dict[str, str]:
    """The fleet's Ray node labels for a device, in the ``kernelfleet.io/`` namespace.

    ``gpu`` (the short GPU type), ``arch``, ``vendor``, ``torch``, ``triton``, ``runtime`` (``cuda-13.0``,
    ``rocm-7.0.2``) and ``warp-size``; a label whose value is unknown (empty) is left out, and ``warp-size`` is only
    given for GPUs."""
    raw = {
        "gpu": info.gpu_type,
        "arch": info.arch,
        "vendor": info.vendor,
        "torch": info.torch,
        "triton": info.triton,
        "runtime": info.runtime,
        "warp-size": str(info.warp_size) if info.warp_size > 0 and info.vendor != "cpu" else "",
    }
    out = {}
    for key, value in raw.items():
        v = label_value(value or "")
        if v:
            out[LABEL_PREFIX + key] = v
    return out
