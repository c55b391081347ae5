"""Rehearsal nodes: a node whose GPU-type label was overridden at `node join` (to rehearse a fleet of several GPU
types on hardware of one type, e.g. two nodes sharing one H200).

A rehearsal node carries ``kernelfleet.io/rehearsal-of=<the GPU type detection found>`` beside its overridden
``kernelfleet.io/gpu``.  Results measured on it are stored under the label's GPU type (their own series, their own
hardware key) and keep the detected type in ``DeviceInfo.extra["rehearsal_of"]``, so that no page or report can
show a rehearsal tag as real hardware of that type.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from workers.device.detect import LABEL_PREFIX
from workers.spec import DeviceInfo

GPU_LABEL = LABEL_PREFIX + "gpu"
REHEARSAL_LABEL = LABEL_PREFIX + "rehearsal-of"
EXTRA_KEY = "rehearsal_of"


def rehearsal_of(labels: Mapping[str, str] | None) -> str | None:
    """The GPU type a rehearsal node really has, or None for a node whose labels are its own hardware's."""
    return (labels or {}).get(REHEARSAL_LABEL) or None


def relabel(device: DeviceInfo | None, node_labels: Mapping[str, str] | None) -> DeviceInfo | None:
    """``device`` as measured on a node with ``node_labels``: on a rehearsal node, the node's GPU type with the
    detected one kept in ``extra``; elsewhere ``device`` unchanged."""
    real = rehearsal_of(node_labels)
    tag = (node_labels or {}).get(GPU_LABEL)
    if device is None or not real or not tag or device.gpu_type == tag:
        return device
    return dataclasses.replace(device, gpu_type=tag, extra={**device.extra, EXTRA_KEY: device.gpu_type or real})


def describe(labels: Mapping[str, str] | None) -> str:
    """ "rehearsal (really h200)" for a rehearsal node's GPU-type label, else the label as it is."""
    tag = (labels or {}).get(GPU_LABEL, "-")
    real = rehearsal_of(labels)
    return f"{tag} (rehearsal; really {real})" if real else tag
