"""The ltx_e2e sweep: sweep.e2e expands into e2e JobSpecs with content keys, bad values fail before anything runs,
and a tiny sweep runs end to end through the orchestrator (local Ray, sandbox, store) on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from orchestrator.config.validate import validate
from orchestrator.plan import jobs as plan
from orchestrator.plan.e2e import plan_e2e, validate_e2e
from tests.support.devices import CPU_ONLY_ENV

REPO = Path(__file__).resolve().parents[2]
CODE = plan.CodeVersion("abc123", "k0")
TINY = [
    "sweep.e2e.tiny=true",
    "sweep.e2e.frames=[9]",
    "sweep.e2e.heights=[64]",
    "sweep.e2e.widths=[96]",
    "sweep.e2e.steps=[2]",
    "sweep.e2e.repeats=1",
]


def _cfg(*overrides):
    c = config.to_plain(config.compose(["+sweep=ltx_e2e", *overrides]))
    validate(c)
    return c


def test_default_is_the_seed_setting():
    specs = plan.plan(_cfg(), CODE)
    assert len(specs) == 1
    s = specs[0]
    assert (s.kind, s.model, s.shape, s.dtype) == ("e2e", "ltx-video", [25, 480, 704], "bf16")
    # plain calls, then the graph-enabled modes: torch.compile's reduce-overhead and the compiled blocks under
    # cuda_graphs (the anchors), the kernels under cuda_graphs with and without compile
    assert s.impls == [
        "eager",
        "triton",
        "compile",
        "triton+compile",
        "compile-max",
        "triton+compile-max",
        "compile-ro",
        "compile+graph",
        "triton+graph",
        "triton+compile+graph",
    ]
    assert s.params["steps"] == 30 and s.params["repeats"] == 3 and s.params["tiny"] is False
    assert s.params["model_path"] is None and s.params["pipeline"] is False
    assert s.key and s.sweep == "ltx_e2e"
    assert json.loads(s.to_json()) == s.to_dict()


def test_the_compile_graph_modes_are_planned_when_asked():
    c = _cfg("sweep.e2e.modes=[eager,compile-ro,triton+compile-ro,compile-max-cg,triton+compile-max-cg]")
    (s,) = plan.plan(c, CODE)
    assert s.impls == ["eager", "compile-ro", "triton+compile-ro", "compile-max-cg", "triton+compile-max-cg"]
    # torch.compile's own graphs take no kernels.inject.cuda_graphs on top
    with pytest.raises(ConfigError, match="sweep.e2e.modes: unknown mode 'compile-ro\\+graph'"):
        validate_e2e({"e2e": {"modes": ["compile-ro+graph"]}})


def test_grid_varies_frames_resolution_steps_dtype():
    c = _cfg(
        "sweep.e2e.frames=[25,121]",
        "sweep.e2e.heights=[480,512]",
        "sweep.e2e.steps=[30,10]",
        "sweep.e2e.dtypes=[bf16,fp16]",
    )
    specs = plan.plan(c, CODE)
    assert len(specs) == 2 * 2 * 2 * 2
    assert {tuple(s.shape) for s in specs} == {(f, h, 704) for f in (25, 121) for h in (480, 512)}
    assert {s.params["steps"] for s in specs} == {30, 10} and {s.dtype for s in specs} == {"bf16", "fp16"}
    assert len({s.key for s in specs}) == len(specs)
    # explicit [height, width] pairs instead of heights x widths
    specs = plan.plan(_cfg("sweep.e2e.resolutions=[[480,704],[704,480]]"), CODE)
    assert [s.shape for s in specs] == [[25, 480, 704], [25, 704, 480]]


def test_keys_are_content_hashes():
    a = [s.key for s in plan.plan(_cfg(), CODE)]
    assert a == [s.key for s in plan.plan(_cfg(), CODE)]
    assert a == [s.key for s in plan.plan(_cfg("sweep.name=other"), CODE)]  # the sweep's name is not the work
    for change in (
        "sweep.e2e.repeats=5",
        "sweep.e2e.model_path=/models/ltx",
        "sweep.e2e.pipeline=true",
        "sweep.e2e.modes=[eager,triton]",
        "sweep.e2e.seed=1",
    ):
        assert not set(a) & {s.key for s in plan.plan(_cfg(change), CODE)}, change
    assert not set(a) & {s.key for s in plan.plan(_cfg(), plan.CodeVersion("abc123", "k1"))}
    # plan_e2e itself leaves the key to plan()
    assert all(s.key == "" for s in plan_e2e(_cfg()["sweep"], "any"))


@pytest.mark.parametrize(
    "e2e,message",
    [
        (
            {"modes": ["eager", "fast"]},
            "sweep.e2e.modes: unknown mode 'fast'; allowed: eager, triton, compile, triton+compile",
        ),
        ({"modes": []}, "sweep.e2e.modes: empty; allowed: eager"),
        ({"frames": [24]}, "sweep.e2e.frames: 24: LTX-Video takes 8k+1 frames"),
        ({"heights": [500]}, "sweep.e2e.heights: 500: must be a multiple of 32"),
        ({"resolutions": [[480]]}, "sweep.e2e.resolutions: [480] is not a [height, width] pair"),
        ({"dtypes": ["fp8"]}, "sweep.e2e.dtypes: unknown dtype 'fp8'; allowed: fp32, bf16, fp16"),
        ({"steps": [0]}, "sweep.e2e.steps: 0 is not a positive integer"),
        ({"repeats": 0}, "sweep.e2e.repeats: must be an integer >= 1"),
        ({"tolerance": -1}, "sweep.e2e.tolerance: must be null"),
        ({"tiny": "yes"}, "sweep.e2e.tiny: must be true or false"),
        ({"tiny": True, "model_path": "/m"}, "cannot be combined with model_path"),
        ({"guidance_scale": 1.0}, "sweep.e2e.guidance_scale: must be > 1"),
        ({"colour": 1}, "sweep.e2e.colour: no such key; allowed keys in sweep.e2e: frames, heights"),
    ],
)
def test_bad_values_name_the_key_and_the_allowed_values(e2e, message):
    with pytest.raises(ConfigError) as exc:
        validate_e2e({"name": "x", "kinds": ["e2e"], "e2e": e2e})
    assert message in str(exc.value)


def test_the_schema_declares_the_keys_of_every_model():
    """schema.E2ECfg holds every key some model takes and no other; its enumerations are workers.jobs.e2e.spec's."""
    import dataclasses

    from orchestrator.config import schema
    from orchestrator.plan.e2e import allowed_keys
    from workers.jobs.e2e import spec as e2e_spec

    fields = {f.name for f in dataclasses.fields(schema.E2ECfg)}
    assert fields == {k for m in e2e_spec.MODELS for k in allowed_keys(m)}
    assert list(schema.E2EModel.__members__) == list(e2e_spec.MODELS)
    assert list(schema.E2EMode.__members__) == list(e2e_spec.MODES)
    assert list(schema.E2EDtype.__members__) == list(e2e_spec.DTYPE_NAMES)


def test_a_composed_e2e_config_is_plain_strings_and_nulls():
    """The enumerations come back as their strings (the run's stored config is JSON); the keys the sweep file and
    the overrides leave unset are null, and plan as the model's defaults."""
    c = _cfg("sweep.e2e.modes=[eager,triton+compile]")
    e2e = c["sweep"]["e2e"]
    assert type(e2e["model"]) is str and e2e["model"] == "ltx-video"
    assert [type(m) for m in e2e["modes"]] == [str, str] and [type(d) for d in e2e["dtypes"]] == [str]
    assert e2e["batches"] is None and e2e["configs"] is None and e2e["new_tokens"] is None
    json.dumps(c)
    (s,) = plan.plan(c, CODE)
    assert s.impls == ["eager", "triton+compile"] and s.params["steps"] == 30


@pytest.mark.parametrize(
    "e2e,message",
    [
        # plain data is planned as given: a value OmegaConf would convert is refused, with what the key takes
        ({"repeats": "3"}, "sweep.e2e.repeats: must be an integer, got '3'"),
        ({"tiny": 1}, "sweep.e2e.tiny: must be true or false, got 1"),
        ({"frames": 25}, "sweep.e2e.frames: must be a list of integers; one value is written [value]"),
        ({"resolutions": [480, 704]}, "sweep.e2e.resolutions: must be a list of lists of integers, got [480, 704]"),
        ({"guidance_scale": "4"}, "sweep.e2e.guidance_scale: must be a number, got '4'"),
        # what OmegaConf itself refuses: the line composition gives
        ({"repeats": 1.5}, "sweep.e2e.repeats: '1.5' is not a valid Integer"),
        ({"frames": [True]}, "sweep.e2e.frames[0]: 'True' is not a valid Integer"),
        ({"modes": ["eager", 3]}, "sweep.e2e.modes: unknown mode '3'; allowed: eager, triton"),
        ({"model_path": ["a"]}, "sweep.e2e.model_path: ['a'] (a list) is not a valid String"),
        # a key of another model
        (
            {"model": "flux", "frames": [9]},
            "sweep.e2e.frames: no such key; allowed keys in sweep.e2e: model, configs, heights, widths, resolutions, "
            "steps, dtypes, modes, repeats",
        ),
        ({"model": "flux", "frames": [9]}, "(for model flux; frames is for ltx-video)"),
        ({"model": "llama", "guidance_scale": 3.0}, "(for model llama; guidance_scale is for ltx-video, flux, sd3)"),
    ],
)
def test_plain_values_are_checked_against_the_schema(e2e, message):
    with pytest.raises(ConfigError) as exc:
        validate_e2e({"name": "x", "kinds": ["e2e"], "e2e": e2e})
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_sweep_file_with_one_value_where_a_list_goes(tmp_path, monkeypatch):
    """A sweep file of the user's own is composed against the same schema: its mistake is one line with the key."""
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    mine = (conf / "sweep" / "ltx_e2e.yaml").read_text().replace("steps: [30]", "steps: 30")
    (conf / "sweep" / "mine.yaml").write_text(mine.replace("name: ltx_e2e", "name: mine"))
    monkeypatch.setenv("KERNELFLEET_CONF", str(conf))
    with pytest.raises(ConfigError) as exc:
        config.compose(["+sweep=mine"])
    assert str(exc.value) == "sweep.e2e.steps: must be a list of integers; one value is written [value]"


def test_plain_values_the_schema_keeps_as_they_are():
    """An integer where a number goes, tuples where lists go, null for the model's default: planned as given."""
    e2e = {"guidance_scale": 4, "resolutions": ((480, 704),), "modes": ("eager",), "steps": None, "tolerance": None}
    (s,) = plan_e2e({"name": "x", "e2e": e2e}, "any")
    assert (s.shape, s.impls, s.params["guidance_scale"], s.params["steps"]) == ([25, 480, 704], ["eager"], 4, 30)


def test_an_e2e_key_is_set_without_a_plus_on_any_sweep():
    """Every key of sweep.e2e is in the schema, so an override sets it as it is written on any sweep (a key the
    sweep file leaves out included)."""
    c = _cfg("sweep.e2e.pipeline=true", "sweep.e2e.text_len=64")
    (s,) = plan.plan(c, CODE)
    assert s.params["pipeline"] is True and s.params["text_len"] == 64
    c = config.to_plain(config.compose(["+sweep=rmsnorm", "sweep.kinds=[e2e]", *TINY]))
    validate(c)
    (s,) = plan.plan(c, CODE)
    assert (s.model, s.shape, s.params["tiny"]) == ("ltx-video", [9, 64, 96], True)


def _cli(args, tmp_path, timeout):
    """The CLI in a subprocess on the CPU whatever the host: the tiny variants are the CPU path CI runs (on a GPU every
    mode runs: tests/workers/test_e2e_models.py::test_every_mode_runs_on_a_gpu, test_e2e.py's GPU tests)."""
    env = {**os.environ, **CPU_ONLY_ENV, "KERNELFLEET_MEASURE_CEILING": "0", "RAY_AUTH_MODE": "disabled"}
    env["COLUMNS"] = "400"
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args, f"store.url=sqlite:///{tmp_path}/kf.db"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
    )


def test_unknown_mode_fails_before_anything_runs(tmp_path):
    p = _cli(["+sweep=ltx_e2e", "sweep.e2e.modes=[eager,turbo]"], tmp_path, 120)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert "sweep.e2e.modes: unknown mode 'turbo'; allowed: eager, triton, compile, triton+compile" in out
    assert "Traceback" not in out and not (tmp_path / "kf.db").exists()


@pytest.mark.slow
def test_tiny_sweep_end_to_end_on_cpu(tmp_path):
    """python -m orchestrator +sweep=ltx_e2e sweep.e2e.tiny=true ...: eager and triton measured, compile skipped."""
    p = _cli(["+sweep=ltx_e2e", *TINY], tmp_path, 600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "1 job: 1 ok" in out
    # the summary says which modes did not run here and why
    assert "not run: compile-ro: torch.compile's reduce-overhead mode replays CUDA graphs; runs on a CUDA GPU" in out
    assert "not run: triton+graph: replays CUDA graphs; runs on a CUDA GPU" in out

    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from orchestrator.store.models import Job, Measurement

    engine = create_engine(f"sqlite:///{tmp_path}/kf.db")
    with Session(engine) as db:
        jobs = db.scalars(select(Job)).all()
        assert len(jobs) == 1
        job = jobs[0]
        assert (job.kind, job.model, job.status, job.shape) == ("e2e", "ltx-video", "ok", [9, 64, 96])
        assert job.spec["params"]["tiny"] is True
        skipped = job.details["skipped"]
        assert set(skipped) == {
            "compile",
            "triton+compile",
            "compile-max",
            "triton+compile-max",
            "compile-ro",
            "compile+graph",
            "triton+graph",
            "triton+compile+graph",
        }
        assert "runs on a GPU" in skipped["compile"] and "cannot trace" in skipped["triton+compile"]
        assert "runs on a GPU" in skipped["compile-max"] and "cannot trace" in skipped["triton+compile-max"]
        assert skipped["compile-ro"] == "torch.compile's reduce-overhead mode replays CUDA graphs; runs on a CUDA GPU"
        for mode in ("compile+graph", "triton+graph", "triton+compile+graph"):
            assert skipped[mode] == "replays CUDA graphs; runs on a CUDA GPU"
        assert job.details["injection"]["triton"]["counts"] == {
            "attn_processor": 4,
            "block_forward": 2,
            "rope_forward": 1,
        }
        # the sweep profiles each mode by default (on the CPU: host ops; on a GPU: device time by kernel class)
        assert job.spec["params"]["profile_steps"] == 3
        assert set(job.details["profile"]) == {"eager", "triton"}
        rows = db.scalars(select(Measurement).where(Measurement.job_id == job.id)).all()
    got = {(m.impl, m.metric): m for m in rows}
    for mode in ("eager", "triton"):
        for metric in (
            "ms_per_step",
            "total_s",
            "warmup_s",
            "max_abs_vs_eager",
            "cos_sim_vs_eager",
            "rel_err_vs_eager",
        ):
            assert (mode, metric) in got, (mode, metric)
        assert got[(mode, "correct")].value == 1.0
        assert got[(mode, "ms_per_step")].samples and got[(mode, "ms_per_step")].value > 0
    assert {impl for impl, _ in got} == {"eager", "triton"}
    engine.dispose()
