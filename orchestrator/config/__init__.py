"""A sweep's configuration: composed with Hydra, typed by the schema, its values checked against the registry.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``compose``         composing one sweep's Hydra configuration, every way it can be wrong as one line (``ConfigError``)
``schema``          the structured-config schema: every key a sweep may set, with its type
``validate``        a composed configuration checked against the kernel registry and the job kinds
==================  ==================================================================================================
"""
