"""The kernels' registry entries: one module per kernel family, each with its ``ENTRIES`` (kernels/registry.py scans
this package; the README's "Add a kernel" says what an entry holds).  An entry imports its own declaration
(kernels/metadata/) and kernel module and the helpers below, never another kernel's entry or module: a kernel's jobs
are keyed by the code they can run (tests/kernels/test_metadata.py).

===================  ==================================================================================================
module               holds
===================  ==================================================================================================
``common``           helper: the standard implementations, ``triton_with_out``, input drawing, upcasting, the row
                     contract, the shape check and modulation spread of the ``[B, S, C]`` modulating row kernels
``ltx_rope``         helper: LTX-Video's RoPE tables, its eager ``apply_rotary_emb`` and the interleaved reference
``rmsnorm``          ``rmsnorm``
``adaln``            ``adaln`` and ``adaln_layer_norm``
``residual_norm``    ``add_rms_norm_modulate``
``gated_residual``   ``gated_residual``
``rope``             ``rope`` and ``rope_rotate_half``
``qk_norm_rope``     ``qk_norm_rope``
``geglu``            ``geglu`` and ``gelu_tanh``
``cross_attention``  ``cross_attention``
===================  ==================================================================================================
"""
