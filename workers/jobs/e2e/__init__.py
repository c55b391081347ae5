"""The end-to-end job: a model's denoising loop or a decoder's ``generate`` in several modes, side by side.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``job``             the ``e2e`` job: the modes run one after another, latents or logits against eager
``spec``            what an ``e2e`` JobSpec may say (plain data, shared with the planner)
``ltx``             LTX-Video: the model, its inputs, one timed call of its denoising loop
``image``           FLUX.1 and SD3/SD3.5: the transformer, its inputs, one timed denoising call
``llm``             a Llama-family decoder: the model, its prompt, one timed ``generate``
``steps``           one timed call: a mark at every step's end, the host's time per step
``size``            how much work a job is before it runs (parameters on the meta device, tokens a step)
``model_configs``   the model configurations built with random weights (``conf/models/``)
``profile``         where one step's device time goes, per mode
==================  ==================================================================================================
"""
