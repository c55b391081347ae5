"""A Llama-family decoder in the e2e job (workers.jobs.e2e.job): the model, its prompt and one timed ``generate`` call.

The call is transformers' own ``generate`` as users run it for speed: a static KV cache (``StaticCache``, made once
for the job's batch and length and passed in, ``reset`` before every call, so a compiled or graphed decode step sees
the same cache tensors every time), greedy decoding, ``new_tokens`` tokens per sequence with no end-of-sequence stop,
and transformers' own automatic compilation off (``disable_compile``): each mode compiles the model itself
(``model.compile(fullgraph=True, mode=...)``, as transformers documents ``torch.compile(model.forward,
mode="reduce-overhead", fullgraph=True)``), so eager stays eager.  The tokens are fixed in advance (a random
sequence, the same in every mode, forced through a logits processor), so every mode decodes the same inputs and its
logits at every step are comparable with eager's: the output compared is the stack of the logits of every step.

Timing: a stopping criterion marks the end of every token on the device's timeline.  The first mark ends the
prefill (the prompt's forward and the first token: ``Call.first_ms``), the intervals after it are decode steps
(``Call.step_ms``: one token for every sequence of the batch).

The decoder is the configuration ``params.config`` (workers.jobs.e2e.model_configs: ``tinyllama-1.1b``, ``llama-3-8b``,
or a model's own ``config.json`` by path: any ``LlamaForCausalLM``-compatible configuration) built on the device with
random weights, or comes from ``model_path`` (a local transformers folder; never a download); ``tiny`` builds a
small one for CPU tests.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import torch

from workers.jobs.e2e import model_configs
from workers.jobs.e2e.spec import LLAMA
from workers.jobs.e2e.steps import Call, Setup, StepMarks
from workers.spec import JobSpec, Measurement

TINY_LLAMA = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)


def _decoder(p: dict, dtype: torch.dtype, device: torch.device):
    """The model (LlamaForCausalLM) and where it came from."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if p["model_path"]:
        path = Path(str(p["model_path"])).expanduser()
        if not (path / "config.json").is_file():
            raise ValueError(f"model_path {str(path)!r}: not a local transformers folder (no config.json)")
        model = LlamaForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
        return model.to(device).eval(), f"decoder {path}"
    if p["tiny"]:
        cfg, what = dict(TINY_LLAMA), "tiny config"
    else:
        conf = model_configs.load(str(p["config"]), LLAMA)["config"]
        cfg = {k: v for k, v in conf.items() if k not in ("architectures", "model_type", "torch_dtype", "dtype")}
        what = f"{p['config']} config"
    torch.manual_seed(int(p["seed"]))
    with torch.device(device):
        model = LlamaForCausalLM(LlamaConfig(**cfg))
    return model.to(dtype).eval(), f"{what}, random weights"


class _ForcedTokens:
    """A logits processor that keeps the logits it is given and forces the next token of a fixed sequence."""

    def __init__(self, tokens: torch.Tensor):
        self.tokens = tokens  # [batch, new_tokens] on the device
        self.step = 0
        self.logits: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.logits.append(scores.detach().float().clone())
        i = min(self.step, self.tokens.shape[1] - 1)  # a step past the last (deferred stop check) repeats it
        self.step += 1
        forced = torch.full_like(scores, float("-inf"))
        return forced.scatter_(1, self.tokens[:, i : i + 1], 0.0)


class _Marks:
    """A stopping criterion that never stops: it marks the end of every token."""

    def __init__(self, marks: StepMarks):
        self.marks = marks

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs) -> torch.Tensor:
        self.marks.step_end()
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def _cache_keyword(model: torch.nn.Module) -> str:
    """The keyword ``generate`` takes the cache by: ``cache`` where the model's forward names it so (transformers
    5.2x, which deprecates ``past_key_values``), else ``past_key_values`` (transformers 4.x, 5.17)."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def setup(spec: JobSpec, device: torch.device, p: dict, dtype: torch.dtype) -> Setup:
    from transformers import StaticCache

    model, source = _decoder(p, dtype, device)
    cfg = model.config
    batch, prompt_len = spec.shape
    new_tokens = int(p["new_tokens"])
    if prompt_len + new_tokens > int(cfg.max_position_embeddings):
        raise ValueError(
            f"prompt_len {prompt_len} + new_tokens {new_tokens} > the model's max_position_embeddings "
            f"{cfg.max_position_embeddings}"
        )
    g = torch.Generator("cpu").manual_seed(int(p["seed"]))
    prompt = torch.randint(0, cfg.vocab_size, (batch, prompt_len), generator=g)
    tokens = torch.randint(0, cfg.vocab_size, (batch, new_tokens), generator=g)
    # never an end-of-sequence token: a sequence that ended would decode padding from there (and all of them ended,
    # generate would stop early), whatever eos_token_id the call passes over the model's generation config
    eos = cfg.eos_token_id if isinstance(cfg.eos_token_id, (list, tuple)) else [cfg.eos_token_id]
    for e in (int(x) for x in eos if x is not None):
        tokens[tokens == e] = (e + 1) % cfg.vocab_size
    if not hasattr(StaticCache, "early_initialization"):
        import transformers

        raise ValueError(
            f"the llama e2e job needs transformers 5 (StaticCache.early_initialization, run with 5.17 and 5.24); "
            f"this is {transformers.__version__}"
        )
    cache = StaticCache(config=cfg, max_cache_len=prompt_len + new_tokens)
    # allocated now, outside any compiled code: the cache's tensors get their static addresses
    # (torch._dynamo.mark_static_address), which reduce-overhead's CUDA graphs need; lazily allocated inside a
    # compiled prefill they would be graph inputs that the step mutates, and Inductor would skip its CUDA graphs
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    cache.early_initialization(batch, cfg.num_key_value_heads, head_dim, dtype, device)
    inputs = {
        "input_ids": prompt.to(device),
        "attention_mask": torch.ones_like(prompt).to(device),
        "tokens": tokens.to(device),
        "cache": cache,
    }
    config = {
        "source": source,
        "config": None if p["model_path"] or p["tiny"] else str(p["config"]),
        "batch": batch,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "layers": int(cfg.num_hidden_layers),
        "vocab": int(cfg.vocab_size),
    }
    return Setup(model, source, torch.zeros(1, device=device), inputs, config)


def run_call(s: Setup, spec: JobSpec, p: dict, device: torch.device, host_probe: bool = False, on_prefill=None) -> Call:
    """One timed ``generate`` call: prefill, then ``new_tokens`` - 1 decode steps (see the module doc).
    ``on_prefill``: called once the prefill's token is out (a profiler's start: the decode steps only)."""
    from transformers import LogitsProcessorList, StoppingCriteriaList

    new_tokens = int(p["new_tokens"])
    forced = _ForcedTokens(s.inputs["tokens"][:, :new_tokens])
    marks = StepMarks(device, host_probe, on_first=on_prefill)
    cache = s.inputs["cache"]
    cache_kw = _cache_keyword(s.model)
    cache.reset()  # zeros the cache tensors in place: a compiled or graphed step keeps its addresses
    marks.begin()
    with torch.no_grad():  # as generate runs itself (inference_mode's tensors could not be reset in place after)
        s.model.generate(
            input_ids=s.inputs["input_ids"],
            attention_mask=s.inputs["attention_mask"],
            **{cache_kw: cache},
            max_new_tokens=new_tokens,
            do_sample=False,
            num_beams=1,
            eos_token_id=None,
            pad_token_id=0,
            disable_compile=True,
            logits_processor=LogitsProcessorList([forced]),
            stopping_criteria=StoppingCriteriaList([_Marks(marks)]),
        )
    logits = torch.stack(forced.logits[:new_tokens], dim=1)  # [batch, new_tokens, vocab]
    return marks.finish(new_tokens, logits)


def rate_measurements(mode: str, calls: list[Call], s: Setup) -> list[Measurement]:
    """The decoder's rates over a mode's timed calls: the prefill's time and tokens/s (batch x prompt_len over the
    prefill, median), decode tokens/s (batch over the median decode step)."""
    batch, prompt_len = int(s.config["batch"]), int(s.config["prompt_len"])
    prefill = [c.first_ms for c in calls if c.first_ms is not None]
    out = []
    if prefill:  # every call's rate kept as a sample: compare and regressions judge rates as they judge times
        med = statistics.median(prefill)
        out.append(Measurement(mode, "prefill_ms", med, "ms", prefill))
        rates = [batch * prompt_len * 1e3 / ms for ms in prefill]
        out.append(Measurement(mode, "prefill_tokens_per_s", batch * prompt_len * 1e3 / med, "tokens/s", rates))
    step = statistics.median(c.ms_per_step for c in calls)
    rates = [batch * 1e3 / c.ms_per_step for c in calls]
    out.append(Measurement(mode, "decode_tokens_per_s", batch * 1e3 / step, "tokens/s", rates))
    return out
