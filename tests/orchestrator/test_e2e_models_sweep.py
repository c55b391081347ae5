"""The flux_e2e, sd3_e2e and llm_e2e sweeps: each expands into one e2e JobSpec per setting (configuration, shape,
steps, dtype), bad values fail before anything runs with the key and the allowed values, and the tiny variant of
each runs end to end through the orchestrator (local Ray, sandbox, store) on the CPU."""

from __future__ import annotations

import pytest

from orchestrator.config import compose as config
from orchestrator.config.compose import ConfigError
from orchestrator.config.validate import validate
from orchestrator.plan import jobs as plan
from orchestrator.plan.e2e import LLM_DEFAULT_MODES, validate_e2e
from tests.orchestrator.test_e2e_sweep import _cli

CODE = plan.CodeVersion("abc123", "k0")
TINY = {
    "flux_e2e": ["sweep.e2e.heights=[64]", "sweep.e2e.widths=[96]", "sweep.e2e.steps=[2]"],
    "sd3_e2e": [
        "sweep.e2e.configs=[sd3.5-medium]",
        "sweep.e2e.heights=[64]",
        "sweep.e2e.widths=[96]",
        "sweep.e2e.steps=[2]",
    ],
    "llm_e2e": ["sweep.e2e.batches=[2]", "sweep.e2e.prompt_lens=[8]", "sweep.e2e.new_tokens=3"],
}


def _cfg(sweep, *overrides):
    c = config.to_plain(config.compose([f"+sweep={sweep}", *overrides]))
    validate(c)
    return c


def test_defaults_are_the_issue_settings():
    (flux,) = plan.plan(_cfg("flux_e2e"), CODE)
    assert (flux.model, flux.shape, flux.dtype, flux.params["config"], flux.params["steps"]) == (
        "flux/flux.1-dev",
        [1024, 1024],
        "bf16",
        "flux.1-dev",
        28,
    )
    assert "triton+graph" in flux.impls and "compile-ro" in flux.impls and flux.sweep == "flux_e2e"
    sd3 = plan.plan(_cfg("sd3_e2e"), CODE)
    assert [(s.model, s.params["config"], s.shape) for s in sd3] == [
        ("sd3/sd3.5-medium", "sd3.5-medium", [1024, 1024]),
        ("sd3/sd3.5-large", "sd3.5-large", [1024, 1024]),
    ]
    llm = plan.plan(_cfg("llm_e2e"), CODE)
    assert [s.shape for s in llm] == [[1, 128], [1, 1024], [8, 128], [8, 1024]]
    assert all(s.model == "llama/tinyllama-1.1b" and s.params["new_tokens"] == 64 for s in llm)
    # the decoder's graph modes are torch.compile's: reduce-overhead with and without the kernels, no +graph
    assert llm[0].impls == LLM_DEFAULT_MODES and "triton+compile-ro" in llm[0].impls
    assert not any(m.endswith("+graph") for m in llm[0].impls)
    assert "steps" not in llm[0].params and "pipeline" not in llm[0].params
    keys = [s.key for s in [flux, *sd3, *llm]]
    assert len(set(keys)) == len(keys)


def test_a_jobs_model_names_its_configuration():
    """The store keys series by model, shape, dtype and mode: two configurations at one shape stay two series."""
    from workers.jobs.e2e.spec import family_of, model_name

    assert model_name("sd3", "sd3.5-large") == "sd3/sd3.5-large" and family_of("sd3/sd3.5-large") == "sd3"
    assert model_name("llama", "/models/my-llama/config.json") == "llama/config"
    assert model_name("flux", "flux.1-dev", tiny=True) == "flux/tiny"
    assert model_name("flux", "flux.1-dev", model_path="/models/FLUX.1-dev/") == "flux/FLUX.1-dev"
    assert model_name("ltx-video", None) == family_of("ltx-video") == "ltx-video"
    (s,) = plan.plan(
        _cfg("llm_e2e", "sweep.e2e.configs=[llama-3-8b]", "sweep.e2e.batches=[1]", "sweep.e2e.prompt_lens=[512]"), CODE
    )
    assert s.model == "llama/llama-3-8b"


def test_grids_and_keys():
    specs = plan.plan(
        _cfg("flux_e2e", "sweep.e2e.resolutions=[[1024,1024],[768,1360]]", "sweep.e2e.steps=[28,8]"), CODE
    )
    assert {(tuple(s.shape), s.params["steps"]) for s in specs} == {
        (r, n) for r in ((1024, 1024), (768, 1360)) for n in (28, 8)
    }
    a = {s.key for s in plan.plan(_cfg("llm_e2e"), CODE)}
    for change in ("sweep.e2e.new_tokens=32", "sweep.e2e.configs=[llama-3-8b]", "sweep.e2e.seed=1"):
        assert not a & {s.key for s in plan.plan(_cfg("llm_e2e", change), CODE)}, change


@pytest.mark.parametrize(
    "e2e,message",
    [
        ({"model": "mochi"}, "sweep.e2e.model: unknown model 'mochi'; allowed: ltx-video, flux, sd3, llama"),
        ({"model": "flux", "heights": [1000]}, "sweep.e2e.heights: 1000: must be a multiple of 16"),
        ({"model": "sd3", "resolutions": [[1024, 1000]]}, "height and width must be multiples of 16"),
        ({"model": "flux", "configs": ["flux.2"]}, "sweep.e2e.configs: config 'flux.2': no such configuration"),
        ({"model": "sd3", "configs": ["tinyllama-1.1b"]}, "is a 'llama' configuration, not 'sd3'"),
        ({"model": "sd3", "configs": []}, "sweep.e2e.configs: empty; known: flux.1-dev"),
        (
            {"model": "llama", "frames": [25]},
            "sweep.e2e.frames: no such key; allowed keys in sweep.e2e: model, configs",
        ),
        ({"model": "llama", "modes": ["eager", "triton+graph"]}, "the decoder takes no +graph mode"),
        ({"model": "llama", "batches": [0]}, "sweep.e2e.batches: 0 is not a positive integer"),
        ({"model": "llama", "new_tokens": 1}, "sweep.e2e.new_tokens: must be an integer >= 2"),
        ({"model": "sd3", "guidance_scale": 1.0}, "sweep.e2e.guidance_scale: must be > 1"),
        ({"model": "flux", "guidance_scale": 0}, "sweep.e2e.guidance_scale: must be > 0"),
        ({"model": "flux", "frame_rate": 25}, "sweep.e2e.frame_rate: no such key"),
    ],
)
def test_bad_values_name_the_key_and_the_allowed_values(e2e, message):
    with pytest.raises(ConfigError) as exc:
        validate_e2e({"name": "x", "kinds": ["e2e"], "e2e": e2e})
    assert message in str(exc.value)


@pytest.mark.slow
@pytest.mark.parametrize("sweep,model", [("flux_e2e", "flux/tiny"), ("sd3_e2e", "sd3/tiny"), ("llm_e2e", "llama/tiny")])
def test_tiny_sweep_end_to_end_on_cpu(tmp_path, sweep, model):
    """python -m orchestrator +sweep=<sweep> sweep.e2e.tiny=true ...: eager and triton measured and stored, the
    modes that need a GPU named with why."""
    p = _cli([f"+sweep={sweep}", "sweep.e2e.tiny=true", "sweep.e2e.repeats=1", *TINY[sweep]], tmp_path, 900)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "1 job: 1 ok" in out
    assert "not run: compile-ro: torch.compile's reduce-overhead mode replays CUDA graphs; runs on a CUDA GPU" in out

    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from orchestrator.store.models import Job, Measurement

    engine = create_engine(f"sqlite:///{tmp_path}/kf.db")
    with Session(engine) as db:
        (job,) = db.scalars(select(Job)).all()
        assert (job.kind, job.model, job.status) == ("e2e", model, "ok")
        assert set(job.details["profile"]) == {"eager", "triton"}
        rows = db.scalars(select(Measurement).where(Measurement.job_id == job.id)).all()
    got = {(m.impl, m.metric) for m in rows}
    assert {("eager", "ms_per_step"), ("triton", "ms_per_step"), ("triton", "correct")} <= got
    if model == "llama/tiny":
        assert {("triton", "decode_tokens_per_s"), ("triton", "prefill_tokens_per_s")} <= got


@pytest.mark.slow
def test_compare_judges_a_decoders_tokens_per_second(tmp_path):
    """Two runs of the tiny decoder (planned, run by `python -m workers run`, imported): compare reads the new
    readings per model (llama/tiny), mode and device, every call's rate a sample."""
    import subprocess
    import sys

    from tests.orchestrator.test_e2e_sweep import REPO

    url = f"sqlite:///{tmp_path}/kf.db"
    grid = ["sweep.e2e.tiny=true", "sweep.e2e.repeats=2", "sweep.e2e.profile_steps=0", "sweep.e2e.modes=[eager]"]

    def run(*args):
        p = subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    for seed in (1, 2):
        plan_out, out = tmp_path / f"plan{seed}.jsonl", tmp_path / f"r{seed}.jsonl"
        run(
            "orchestrator",
            "+sweep=llm_e2e",
            *grid,
            *TINY["llm_e2e"],
            f"sweep.e2e.seed={seed}",
            "dry_run=true",
            f"plan_out={plan_out}",
        )
        run("workers", "run", str(plan_out), "--out", str(out))
        run("orchestrator", "import", str(out), "--url", url)
    report = run(
        "orchestrator",
        "compare",
        "--url",
        url,
        "--baseline",
        "1",
        "--current",
        "2",
        "--metric",
        "decode_tokens_per_s",
        "--include-cpu",
        "--json",
    )
    got = __import__("json").loads(report)
    assert got["higher_is_better"] is True and got["unit"] == "tokens/s"
    (row,) = got["series"]
    assert (row["kernel"], row["shape"], row["impl"], row["state"]) == ("llama/tiny", [2, 8], "eager", "both")
    assert row["ratio"] == pytest.approx(row["current_median"] / row["baseline_median"])
